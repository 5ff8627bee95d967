"""Per-trait summaries accumulated block by block: tests, hits, lambda_GC and top hits.

Nothing here keeps all m x t p-values: lambda_GC = median(chi2_1) / 0.4549 uses the median
p-value read from a per-trait histogram of p (``BINS`` uniform bins, linear inside the bin
that holds the median; with 20,000 tests per trait its relative error is below 1e-3), and the
top hits are a running k-smallest selection merged per block.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from . import parts
from .summaries_kernels import fold, tally

BINS = 1024


class Summaries:
    """Accumulate the (trait, SNP) p-values of every block; ``table()``, ``top_hits()`` at the
    end."""

    def __init__(self, traits, top: int = 10, threshold: float | None = None):
        self.traits = list(traits)
        t = len(self.traits)
        self.top, self.threshold = top, threshold
        self.counts = np.zeros((t, BINS), dtype=np.int64)
        self.tests = np.zeros(t, dtype=np.int64)
        self.hits = np.zeros(t, dtype=np.int64)
        # running top hits, t x top, the first kept[j] of row j in use: p, SNP index, beta, SE
        self.best = [np.full((t, top), np.inf), np.zeros((t, top), dtype=np.int64),
                     np.zeros((t, top)), np.zeros((t, top))]
        self.kept = np.zeros(t, dtype=np.int64)

    def add(self, p, beta, se, snp_rows: np.ndarray) -> None:
        """p, beta, se: t x m_b of one SNP block (trait-major); ``snp_rows``: (m_b,) SNPs."""
        self.tests += p.shape[1]
        threshold = np.inf if self.threshold is None else float(self.threshold)
        snp_rows = np.asarray(snp_rows, dtype=np.int64)
        parts.run(tally, p.shape[0], lambda rows: (
            p[rows], beta[rows], se[rows], snp_rows, threshold, self.counts[rows],
            self.hits[rows], *(a[rows] for a in self.best), self.kept[rows]))

    def add_hits(self, hits, snp_rows: np.ndarray) -> None:
        """A block's ``gpu.Hits`` (its pairs with p <= threshold and its top-list candidates;
        the run's histograms with its last block)."""
        self.tests += hits.m
        if hits.counts is not None:
            self.counts += hits.counts
        threshold = np.inf if self.threshold is None else float(self.threshold)
        fold(hits.trait, hits.column, hits.p, hits.beta, hits.se,
             np.asarray(snp_rows, dtype=np.int64), threshold, self.hits, *self.best, self.kept)

    def top_hits(self, snps: pd.DataFrame) -> pd.DataFrame:
        """The ``top`` smallest p-values of each trait: Pheno, SNP, Chr, ChrPos, PValue,
        SnpWeight, SnpWeightSE; ``snps`` holds SNP, Chr, ChrPos by SNP index."""
        used = np.arange(self.top)[None, :] < self.kept[:, None]
        p, rows, beta, se = (a[used] for a in self.best)
        trait = np.nonzero(used)[0]
        frame = snps.iloc[rows].reset_index(drop=True)
        frame["SNP"] = frame["SNP"].astype(object)
        frame.insert(0, "Pheno", np.asarray(self.traits, dtype=object)[trait])
        frame["PValue"], frame["SnpWeight"], frame["SnpWeightSE"] = p, beta, se
        return frame.sort_values(["Pheno", "PValue"], kind="stable").reset_index(drop=True)

    def median_p(self) -> np.ndarray:
        """Median p-value per trait, linear inside the histogram bin that holds it."""
        cum = np.cumsum(self.counts, axis=1)
        half = self.tests / 2.0
        b = (cum < half[:, None]).sum(axis=1).clip(0, BINS - 1)
        before = np.where(b > 0, cum[np.arange(len(b)), b - 1], 0)
        inside = self.counts[np.arange(len(b)), b]
        frac = np.where(inside > 0, (half - before) / np.maximum(inside, 1), 0.5)
        return (b + frac) / BINS

    def table(self, h2: pd.DataFrame) -> pd.DataFrame:
        """One row per trait: tests, hits (p <= threshold), min_p, lambda_gc, h2 (mean over the
        kinships of a LOCO scan)."""
        lam = stats.chi2.isf(self.median_p(), 1) / stats.chi2.ppf(0.5, 1)
        min_p = np.where(self.kept > 0, self.best[0][:, 0], 1.0)
        frame = pd.DataFrame({"tests": self.tests, "min_p": min_p,
                              "lambda_gc": lam, "h2": h2.mean(axis=1).to_numpy()},
                             index=pd.Index(self.traits, name="Pheno"))
        if self.threshold is not None:
            frame.insert(1, "hits", self.hits)
        return frame
