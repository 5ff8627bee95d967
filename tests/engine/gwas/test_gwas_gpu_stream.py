"""The GPU scan with overlapped transfers (engine/gwas/gpu.py) equals the CPU scan to 1e-8 in
float64, on the device or in the CUDA emulator (the ``where`` fixture): every row without a
threshold; with one, the hits that came back, the per-trait summaries formed from device
histograms and the top hits chosen from the device's candidates, in memory and streamed to
Parquet, over several SNP blocks of each LOCO kinship (one shorter than the top list)."""
import numpy as np
import pandas as pd
import pytest

from engine import gwas
from gwas_oracles import random_bed, random_traits, standardized

MEMORY = 500_000              # n = 80, t = 12: blocks of 40 SNPs, 1 trait per tile


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    prefix, values = random_bed(tmp_path_factory.mktemp("gwas_gpu"), n=80, m=130, seed=31)
    pheno, covar = random_traits(standardized(values), t=12, seed=32)
    return prefix, pheno, covar


def scan(problem, **options):
    prefix, pheno, covar = problem
    return gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", memory=MEMORY,
                     **options)


def assert_same(gpu, cpu):
    assert gpu.spec["block"] == cpu.spec["block"] == (40, 1)
    pd.testing.assert_frame_equal(gpu.frame, cpu.frame, check_exact=False, rtol=1e-8)
    pd.testing.assert_frame_equal(gpu.summary, cpu.summary, check_exact=False, rtol=1e-8)
    pd.testing.assert_frame_equal(gpu.top_hits, cpu.top_hits, check_exact=False, rtol=1e-8)


def test_every_row_equals_the_cpu(problem, where):
    assert_same(scan(problem, backend="gpu"), scan(problem))


@pytest.mark.parametrize("top", [3, 30])
def test_hits_summaries_and_top_hits_equal_the_cpu(problem, where, top):
    cpu = scan(problem, pvalue_threshold=0.05, top=top)
    gpu = scan(problem, backend="gpu", pvalue_threshold=0.05, top=top)
    assert_same(gpu, cpu)
    assert 0 < len(cpu.frame) < 12 * 130 and (cpu.summary.hits > 0).all()
    kept = cpu.top_hits.groupby("Pheno").size()
    assert (kept == top).all()
    assert (cpu.top_hits.PValue > 0.05).any() == (top == 30)    # candidates above the threshold


def test_hits_streamed_to_parquet_equal_the_in_memory_scan(problem, where, tmp_path):
    pytest.importorskip("pyarrow")
    memory = scan(problem, backend="gpu", pvalue_threshold=0.05)
    streamed = scan(problem, backend="gpu", pvalue_threshold=0.05, output=tmp_path / "out")
    pd.testing.assert_frame_equal(streamed.frame, memory.frame)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "summary.parquet"),
                                  memory.summary)
    np.testing.assert_array_equal(streamed.top_hits.PValue, memory.top_hits.PValue)


def test_next_block_is_sent_before_this_block_is_consumed(problem, monkeypatch):
    """The software pipeline: block k + 1's genotypes go to the device (``ndarray.set``, the
    copy stream) before block k's results reach the host's summaries and output (``progress``
    after each block), so on a device the copy and the compute of the next block overlap the
    host's work on this one."""
    from cuda_emulator import cupy_on_cpu

    events = []
    sent = cupy_on_cpu.ndarray.set

    def logged(self, host, stream=None):
        if self.ndim == 2 and self.shape[0] == 80:            # a genotype block (n = 80)
            events.append("sent")
        return sent(self, host, stream)

    def progress(done, total):                               # also called between kinships
        if done > events.count("consumed"):
            events.append("consumed")

    monkeypatch.setattr(cupy_on_cpu.ndarray, "set", logged)
    with cupy_on_cpu.installed():
        scan(problem, backend="gpu", pvalue_threshold=0.05, progress=progress)
    # two kinships x two blocks (40 + 25 SNPs): sent 1, sent 2, consumed 1, consumed 2 each
    assert events == ["sent", "sent", "consumed", "consumed"] * 2
