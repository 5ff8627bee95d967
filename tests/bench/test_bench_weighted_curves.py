"""bench.weighted_curves: a tiny run times each estimate and, where R's survival is installed,
finds R's standard errors equal to survscan's."""
import shutil
import subprocess

from bench.weighted_curves import main


def _r_has_survival() -> bool:
    return shutil.which("Rscript") is not None and subprocess.run(
        ["Rscript", "-e", "library(survival)"], capture_output=True).returncode == 0


def test_weighted_curves_tiny_end_to_end():
    out = main(3000, 1)
    ours = out["survscan"]
    assert all(ours[k] > 0 for k in ("km_greenwood_s", "km_robust_s", "cif_s",
                                     "logrank_robust_s"))
    assert len(ours["km_se"]) == len(ours["cif_se"]) == 6
    if not _r_has_survival():
        assert "skipped" in out["R"]
        return
    assert out["km_se_max_rel_diff"] < 1e-10 and out["cif_se_max_rel_diff"] < 1e-10
    assert out["robust_score_rel_diff"] < 1e-8
