"""bench profile, cvsteps and ties at toy sizes: the A/B runs agree and the reports are written."""
import json

import pytest

from bench import cost_model, cv_steps, ties_strata
from engine.regression.backends.cox_cpu import CoxCpuBackend


def test_profile_counts_the_kernels_and_both_steps_agree(tmp_path):
    record = cost_model.run(3000, 40, ratios=(0.1,), repeats=1, out=tmp_path)
    plain, plane = record["fits"]
    assert (plain["plane_step"], plane["plane_step"]) == (False, True)
    assert plane["objective"] == pytest.approx(plain["objective"], rel=1e-9)
    assert plain["kernels"]["cox_kernels.risk_set_pass"]["calls"] >= plain["iterations"]
    assert "cox_cpu.direction_curvature" in plane["kernels"]
    assert "cox_cpu.direction_curvature" not in plain["kernels"]
    assert record["layout_bytes_per_row"] == 25.0
    assert CoxCpuBackend.plane_step
    saved = json.loads((tmp_path / "cost_model_n3000_p40_breslow.json").read_text())
    assert saved["nnz"] == record["nnz"]


def test_cvsteps_same_lambda_and_curve(tmp_path):
    record = cv_steps.run(1200, 30, folds=3, grid=4, out=tmp_path)
    runs = record["runs"]
    assert runs["plane"]["lambda"] == runs["plain"]["lambda"]
    assert runs["plane"]["max_rel_curve_diff"] < 1e-6
    assert CoxCpuBackend.plane_step


def test_ties_bench_fits_every_variant(tmp_path):
    record = ties_strata.run(3000, 30, strata=5, repeats=1, out=tmp_path)
    assert set(record["fits"]) == {"plain", "day ties, breslow", "day ties, efron", "5 strata",
                                   "entry times"}
    assert all(f["converged"] for f in record["fits"].values())
    assert record["events_per_day_max"] > 1
    assert (tmp_path / "ties_strata_n3000_p30.md").exists()
