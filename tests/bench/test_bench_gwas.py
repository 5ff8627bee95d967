"""bench gwas: a tiny run through ``python -m bench gwas`` writes JSON and Markdown with the
FaST-LMM agreement gate and the naive-GLS extrapolation."""
import json

import pytest

from bench.__main__ import main


@pytest.mark.slow
def test_gwas_bench_tiny_end_to_end(tmp_path):
    pytest.importorskip("fastlmm")
    record = main(["gwas", "--sizes", "300:3", "--naive", "3:1", "--repeats", "1",
                   "--out", str(tmp_path), "--name", "tiny"])
    row = record["sizes"]["rows"][0]
    assert row["m"] == 300 and row["t"] == 3 and row["rows"] == 900
    assert row["max_abs_log10_p_diff"] < 1e-3 and row["speedup_vs_fastlmm"] > 0
    assert row["naive_gls_s_extrapolated"] > 0 and row["fastlmm_trait_by_trait_s_extrapolated"] > 0
    saved = json.loads((tmp_path / "tiny.json").read_text())
    assert saved["sizes"]["rows"][0]["tests"] == 900
    assert "| 300 | 3 |" in (tmp_path / "tiny.md").read_text()
