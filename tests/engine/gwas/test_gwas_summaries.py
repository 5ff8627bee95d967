"""The one-pass per-trait summaries (``summaries_kernels.tally``) and the 4 KB-page output arrays
against brute-force definitions: a stable sort of every p for the top hits (ties to the lower
SNP), a histogram by counting, and ``np.tile``."""
import numpy as np
import pandas as pd

from engine.gwas.pages import paged, tiled
from engine.gwas.summaries import BINS, Summaries


def test_top_hits_histogram_and_hits_equal_a_stable_sort_and_counting():
    rng = np.random.default_rng(3)
    t, m, top = 4, 500, 7
    p = np.round(rng.uniform(size=(t, m)), 2)                 # many ties, across blocks
    p[1, :] = 0.5                                              # a trait of one value
    p[2, 10] = np.nan                                          # left out of everything
    beta, se = rng.normal(size=(t, m)), rng.uniform(1, 2, size=(t, m))
    summary = Summaries([f"y{j}" for j in range(t)], top=top, threshold=0.05)
    for start in range(0, m, 120):
        block = slice(start, start + 120)
        summary.add(p[:, block], beta[:, block], se[:, block], np.arange(m)[block])
    snps = pd.DataFrame({"SNP": [f"s{i}" for i in range(m)], "Chr": 1, "ChrPos": np.arange(m)})
    hits = summary.top_hits(snps)
    for j in range(t):
        kept = np.flatnonzero(~np.isnan(p[j]))
        order = kept[np.argsort(p[j, kept], kind="stable")[:top]]
        got = hits[hits.Pheno == f"y{j}"]
        np.testing.assert_array_equal(got.SNP, [f"s{i}" for i in order])
        np.testing.assert_array_equal(got.PValue, p[j, order])
        np.testing.assert_array_equal(got.SnpWeight, beta[j, order])
        np.testing.assert_array_equal(got.SnpWeightSE, se[j, order])
        counts = np.bincount(np.minimum((p[j, kept] * BINS).astype(int), BINS - 1),
                             minlength=BINS)
        np.testing.assert_array_equal(summary.counts[j], counts)
        assert summary.hits[j] == (p[j, kept] <= 0.05).sum()
    table = summary.table(pd.DataFrame({"all": np.full(t, 0.5)}))
    np.testing.assert_array_equal(table.min_p, np.nanmin(p, axis=1))


def test_no_top_hits_asked():
    summary = Summaries(["a"], top=0)
    summary.add(np.array([[0.2, 0.1]]), np.ones((1, 2)), np.ones((1, 2)), np.arange(2))
    assert len(summary.top_hits(pd.DataFrame({"SNP": ["s0", "s1"]}))) == 0
    assert summary.counts.sum() == 2


def test_paged_arrays_hold_what_is_written_and_tile_as_numpy():
    a = paged((3, 5), np.int16)
    a[:] = np.arange(15, dtype=np.int16).reshape(3, 5)
    assert a.dtype == np.int16 and a.flags.writeable and a.sum() == 105
    for values in (np.arange(4.0), np.arange(3, dtype=np.int8), np.array(["x", "y"], object)):
        np.testing.assert_array_equal(tiled(values, 3), np.tile(values, 3))
        assert tiled(values, 3).dtype == values.dtype
    assert paged((0, 4)).shape == (0, 4)
