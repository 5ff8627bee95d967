"""bench: a tiny end-to-end run writes the JSON and Markdown reports with every field."""
import json
from pathlib import Path

import numpy as np
import pytest

from bench.__main__ import main
from bench.adapters import Run
from bench.report import compare

TOOL_FIELDS = {"tool", "status", "reason", "wall_s", "peak_mem_mb", "n_iter", "converged",
               "objective", "nonzero_coef", "coef", "max_abs_coef_diff", "rel_objective_diff",
               "agrees", "ratio"}


def _read(out):
    (json_path,) = Path(out).glob("*.json")
    (md_path,) = Path(out).glob("*.md")
    return json.loads(json_path.read_text()), md_path.read_text()


@pytest.mark.slow  # skglm's JIT compilation alone takes about 20 s
def test_quick_tiny_end_to_end(tmp_path):
    main(["quick", "--n", "2000", "--p", "20", "--out", str(tmp_path)])
    record, md = _read(tmp_path)
    assert set(record) >= {"created", "machine", "problem", "options", "accuracy_rule", "tools"}
    assert set(record["machine"]) >= {"cpu", "logical_cores", "ram_gb", "python", "packages"}
    assert record["problem"]["n"] == 2000 and record["problem"]["p"] == 20
    assert [t["tool"] for t in record["tools"]] == ["survscan", "lifelines", "coxnet", "skglm"]
    for t in record["tools"]:
        assert set(t) == TOOL_FIELDS
        if t["status"] == "ok":
            assert t["wall_s"] > 0 and len(t["coef"]) == 20 and np.isfinite(t["objective"])
    survscan = record["tools"][0]
    assert survscan["status"] == "ok", survscan["reason"]
    for t in record["tools"][1:]:
        if t["status"] == "ok":
            assert t["agrees"] is not None and (t["ratio"] is not None) == t["agrees"]
        else:
            assert t["reason"]
    assert "| survscan | ok |" in md and "lifelines" in md and "Python" in md


def test_skips_are_reported_with_reasons(tmp_path):
    main(["quick", "--n", "1000", "--p", "10", "--strata", "4", "--peers", "coxnet,skglm",
          "--out", str(tmp_path)])
    record, md = _read(tmp_path)
    peers = {t["tool"]: t for t in record["tools"][1:]}
    assert all(t["status"] == "skipped" and "strata" in t["reason"] for t in peers.values())
    assert "no strata" in md


def test_ratio_needs_equal_accuracy():
    ref = Run("survscan", "ok", wall_s=1.0, objective=100.0, coef=np.array([0.5, 0.0]))
    close = Run("x", "ok", wall_s=2.0, objective=100.0 + 1e-7, coef=np.array([0.50005, 0.0]))
    far = Run("x", "ok", wall_s=2.0, objective=100.1, coef=np.array([0.6, 0.0]))
    assert compare(ref, close)[0]
    assert not compare(ref, far)[0]
