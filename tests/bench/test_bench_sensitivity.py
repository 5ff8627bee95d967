"""bench sensitivity: a tiny grid against sampled engine.fit calls writes its report, and the
sampled fits agree with the grid."""
import json
from pathlib import Path

from bench.sensitivity import run


def test_tiny_grid_report(tmp_path):
    record = run(2000, 20, density=0.2, masks=2, sets=2, penalties=2, loop_sample=2,
                 out=str(tmp_path))
    (json_path,) = Path(tmp_path).glob("*.json")
    assert json.loads(json_path.read_text())["variants"] == 8 == record["variants"]
    assert record["errors"] == 0 and record["max_abs_diff_sampled"] < 1e-6
    assert record["grid_s"] > 0 and record["loop_s_extrapolated"] > 0
    assert "CPU:" in next(Path(tmp_path).glob("*.md")).read_text()


def test_tight_tolerance_reaches_grid_and_loop(tmp_path):
    """--tol is the grid's and the sampled fits' alike: at 1e-12 they agree to 1e-8, and the
    report says so in its name and title."""
    record = run(2000, 20, density=0.2, masks=2, sets=1, penalties=2, loop_sample=2,
                 out=str(tmp_path), parallel="serial", tol=1e-12)
    assert record["tol"] == 1e-12 and record["max_abs_diff_sampled"] < 1e-8
    (md,) = Path(tmp_path).glob("*_tol1e-12.md")
    assert "tol 1e-12" in md.read_text()


def test_gpu_grid_runs_on_the_device_alone(tmp_path, where):
    """backend="gpu" times the serial grid only: its variants run one after another on the
    device, and the CPU's thread grid refuses a GPU backend (the default once stopped the
    device run's benchmark)."""
    record = run(400, 6, density=0.3, masks=2, sets=1, penalties=1, loop_sample=2,
                 out=str(tmp_path), backend="gpu")
    assert record["backend"] == "gpu" and record["variants"] == 2 and record["errors"] == 0
    assert "grid_parallel_s" not in record and record["max_abs_diff_sampled"] < 1e-6
