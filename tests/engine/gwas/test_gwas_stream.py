"""Out-of-core gwas.scan: Parquet output equals the in-memory scan bit for bit, memory-bounded
blocks, p-value thresholds, per-trait summaries (lambda_GC, top hits) and the prefetch order."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from engine import gwas
from engine.gwas import blocks
from gwas_oracles import random_bed, random_traits, standardized


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("gwas_stream")
    prefix, values = random_bed(path, n=80, m=300, chromosomes=3, seed=11)
    pheno, covar = random_traits(standardized(values), t=5, seed=12)
    return prefix, pheno, covar


def test_out_of_core_equals_in_memory_bit_for_bit(problem, tmp_path):
    prefix, pheno, covar = problem
    kwargs = dict(bed=prefix, pheno=pheno, covar=covar, kinship="loco", memory=490_000)
    memory = gwas.scan(**kwargs)
    disk = gwas.scan(output=tmp_path / "out", **kwargs)
    assert disk.spec["block"] == memory.spec["block"] and memory.spec["block"][0] < 100
    assert disk._frame is None                              # nothing held until asked
    pd.testing.assert_frame_equal(disk.frame, memory.frame, check_exact=True)
    pd.testing.assert_frame_equal(disk.summary, memory.summary, check_exact=True)
    pd.testing.assert_frame_equal(disk.top_hits, memory.top_hits, check_exact=True)
    parts = sorted(p.name for p in (tmp_path / "out" / "associations").iterdir())
    assert parts == [f"Pheno=y{j}" for j in range(5)]
    one = pd.read_parquet(tmp_path / "out" / "associations" / "Pheno=y2")
    assert len(one) == 300 and set(one.columns) >= {"SNP", "PValue", "SnpWeight"}
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "summary.parquet"),
                                  memory.summary)
    with pytest.raises(FileExistsError, match="already holds results"):
        gwas.scan(output=tmp_path / "out", **kwargs)


def test_block_sizes_do_not_change_the_numbers(problem):
    prefix, pheno, covar = problem
    small = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all", memory=380_000)
    large = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all")
    assert small.spec["block"][0] < 50 and small.spec["block"][1] < 5
    assert large.spec["block"] == (300, 5)
    pd.testing.assert_frame_equal(small.frame, large.frame, check_exact=False, rtol=1e-12)


def test_pvalue_threshold_keeps_hits_and_counts_them(problem, tmp_path):
    prefix, pheno, covar = problem
    full = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all")
    kept = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all",
                     pvalue_threshold=0.05, output=tmp_path / "hits")
    want = full.frame[full.frame.PValue <= 0.05].reset_index(drop=True)
    assert 0 < len(want) < len(full.frame)
    pd.testing.assert_frame_equal(kept.frame, want, check_exact=True)
    counts = want.groupby("Pheno", observed=False).size().reindex(kept.summary.index, fill_value=0)
    np.testing.assert_array_equal(kept.summary.hits, counts)
    # hits go to one file per flush (not one per trait), rows in (trait, SNP) order
    files = [p.name for p in (tmp_path / "hits" / "associations").iterdir()]
    assert files == ["part000000.parquet"]
    one = pd.read_parquet(tmp_path / "hits" / "associations", filters=[("Pheno", "==", "y2")])
    assert len(one) == (want.Pheno == "y2").sum() > 0
    np.testing.assert_array_equal(one.PValue, want.PValue[want.Pheno == "y2"])


def test_summaries_against_the_full_frame(problem):
    prefix, pheno, covar = problem
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", top=4,
                    memory=490_000)
    for trait, rows in res.frame.groupby("Pheno", observed=True):
        # the histogram's median lies between the order statistics around the exact median
        chi2 = np.sort(stats.chi2.isf(rows.PValue, 1)) / stats.chi2.ppf(0.5, 1)
        assert chi2[148] <= res.summary.loc[trait, "lambda_gc"] <= chi2[151]
        assert res.summary.loc[trait, "tests"] == 300
        assert res.summary.loc[trait, "min_p"] == rows.PValue.min()
        top = rows.nsmallest(4, "PValue")[["SNP", "PValue", "SnpWeight", "SnpWeightSE"]] \
            .astype({"SNP": object})                        # categorical in the frame only
        got = res.top_hits[res.top_hits.Pheno == trait][top.columns]
        pd.testing.assert_frame_equal(got.reset_index(drop=True), top.reset_index(drop=True))


def test_lambda_gc_of_many_tests_is_the_median_to_1e3_relative():
    from engine.gwas.summaries import Summaries

    rng = np.random.default_rng(0)
    p = rng.uniform(size=(3, 20_000)) ** np.array([[1.0], [1.3], [0.8]])  # null, inflated, deflated
    summary = Summaries(["a", "b", "c"])
    for start in range(0, 20_000, 3_000):                                # in blocks
        block = p[:, start:start + 3_000]
        summary.add(block, block, block, np.arange(start, start + block.shape[1]))
    lam = summary.table(pd.DataFrame({"all": [0.1, 0.2, 0.3]})).lambda_gc.to_numpy()
    exact = np.median(stats.chi2.isf(p, 1), axis=1) / stats.chi2.ppf(0.5, 1)
    np.testing.assert_allclose(lam, exact, rtol=1e-3)
    assert lam[1] > 1.1 and lam[2] < 0.95


def test_memory_parsing_and_budget():
    assert blocks.parse_memory("4GB") == 4 * 2**30
    assert blocks.parse_memory("512 mb") == 512 * 2**20
    assert blocks.parse_memory(1000) == 1000
    with pytest.raises(ValueError, match="give bytes"):
        blocks.parse_memory("lots")
    m_b, t_b = blocks.block_sizes(2**30, n=1000, m=10**6, t=10**4)
    working = 8 * (4 * 1000**2 + 3 * 1000 * 10**4 + 1024 * 10**4) + m_b * (32 * 1000 + 160 * t_b)
    assert working <= 2**30 and m_b >= 64
    with pytest.raises(ValueError, match="raise memory"):
        blocks.block_sizes(10**6, n=1000, m=10, t=10)


def test_prefetch_reads_ahead_in_order():
    calls = []

    def read(start, stop):
        calls.append(start)
        return np.arange(start, stop)

    out = list(blocks.prefetched(read, range(0, 10, 4), 4))
    assert [s for s, _ in out] == [0, 4, 8] and calls == [0, 4, 8]
    np.testing.assert_array_equal(np.concatenate([b for _, b in out]), np.arange(12))
