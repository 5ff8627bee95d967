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
