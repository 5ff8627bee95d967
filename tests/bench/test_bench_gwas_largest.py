"""bench gwas --largest: a small slice of the largest problem through the GPU path (in the CUDA
emulator) and the CPU writes the same hits and summaries, and extrapolates to m = 10^6."""
import json

import pandas as pd
import pytest

from bench import gwas_largest
from bench.__main__ import main


@pytest.mark.slow
def test_largest_slice_on_the_emulated_gpu_equals_the_cpu(tmp_path, monkeypatch):
    from cuda_emulator.cupy_on_cpu import installed

    monkeypatch.setattr(gwas_largest, "TMP", tmp_path)
    cpu = gwas_largest.run(2000, 6, "cpu", threshold=1e-3, memory="44MB")
    with installed():
        record = main(["gwas", "--sizes", "", "--largest", "2000:6", "--backend", "gpu",
                       "--threshold", "1e-3", "--memory", "44MB", "--out", str(tmp_path),
                       "--name", "largest"])
    gpu = record["largest"]
    assert gpu["block"] == cpu["block"] and gpu["blocks"] == cpu["blocks"] > 2
    assert gpu["hits_written"] == cpu["hits_written"] > 0
    assert gpu["wall_s_extrapolated_to_m_full"] > gpu["wall_s"]
    hits = pd.read_parquet(tmp_path / "largest_gpu_output" / "associations")
    assert len(hits) == gpu["hits_written"] and (hits.PValue <= 1e-3).all()
    saved = json.loads((tmp_path / "largest.json").read_text())
    assert saved["largest"]["t"] == 6
    assert "extrapolated to m=1,000,000" in (tmp_path / "largest.md").read_text()
