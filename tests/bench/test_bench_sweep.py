"""The sweep benchmark end to end at a toy size: every file written, ratios only at equal
accuracy (no timing asserts)."""
import json

import pytest

from bench import sweep


@pytest.mark.slow
def test_sweep_over_strata_writes_reports(tmp_path):
    options = {"tol": 1e-9, "peer_tol": 1e-9, "lifelines_max_np2": 0, "coxnet_max_bytes": 6e9}
    summary = sweep.run("strata", [1, 300], 600, 8, 0.2, "l1", 0.2, 0,
                        ["survscan", "survscan-ccd", "coxnet"], options, tmp_path)
    name = "sweep_strata_p8_l1_r0.2_n600"
    record = json.loads((tmp_path / f"{name}.json").read_text())
    assert record["values"] == [1, 300]
    assert (tmp_path / f"{name}.png").stat().st_size > 1000
    text = (tmp_path / f"{name}.md").read_text()
    assert "| 300 |" in text and "survscan-ccd / survscan" in text
    by_tool = {t["tool"]: t for t in summary["records"][0]["tools"]}
    assert by_tool["survscan-ccd"]["agrees"] is True       # the papers' CCD reaches our optimum
    assert by_tool["coxnet"]["status"] == "ok"
    stratified = {t["tool"]: t for t in summary["records"][1]["tools"]}
    assert stratified["coxnet"]["status"] == "skipped"      # Coxnet has no strata
