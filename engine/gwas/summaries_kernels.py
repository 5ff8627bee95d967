"""``Summaries.add`` in one pass over a block's p-values, allocating nothing: the per-trait
histogram of p, the hits (p <= threshold) and the running ``top`` smallest p per trait.

The top list of a trait is kept sorted by p; a p joins it only when strictly smaller than the
last kept one, and moves up only past strictly larger ones, so among equal p-values the SNP
seen first (the lower SNP index) ranks first: the same rows as a stable sort of all the
trait's p-values.  NaN p-values are left out of the histogram and the top list.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def tally(p, beta, se, snp_rows, threshold, counts, hits, best_p, best_row, best_beta,
          best_se, kept):
    """Fold a block (p, beta, se: t x m_b; ``snp_rows``: (m_b,) SNP indices) into
    ``counts`` (t x bins), ``hits`` (t,) and the top lists (t x top, the first ``kept[j]``
    entries of row j in use).  Each trait touches only its own rows of the outputs, so
    parts of the traits may run on the cores' threads (``parts``)."""
    bins = counts.shape[1]
    for j in range(p.shape[0]):
        for i in range(p.shape[1]):
            pv = p[j, i]
            if pv != pv:
                continue
            counts[j, min(int(pv * bins), bins - 1)] += 1
            if pv <= threshold:
                hits[j] += 1
            keep(j, pv, snp_rows[i], beta[j, i], se[j, i], best_p, best_row, best_beta,
                 best_se, kept)


@njit(cache=True, nogil=True)
def fold(trait, column, p, beta, se, snp_rows, threshold, hits, best_p, best_row, best_beta,
         best_se, kept):
    """``tally`` of the pairs k (trait[k], column[k]) of a block that came back from the GPU
    (``gpu.Hits``: hits and top-list candidates, in (trait, SNP) order), histograms aside."""
    for k in range(p.shape[0]):
        j, pv = trait[k], p[k]
        if pv <= threshold:
            hits[j] += 1
        keep(j, pv, snp_rows[column[k]], beta[k], se[k], best_p, best_row, best_beta, best_se,
             kept)


@njit(cache=True, nogil=True)
def keep(j, pv, row, b, s, best_p, best_row, best_beta, best_se, kept):
    """Put p-value pv (SNP ``row``, beta b, SE s) in trait j's sorted top list if it belongs
    there."""
    top = best_p.shape[1]
    n = kept[j]
    if top == 0 or (n == top and not pv < best_p[j, top - 1]):
        return
    k = n if n < top else top - 1                     # the slot freed at the end
    while k > 0 and best_p[j, k - 1] > pv:
        best_p[j, k], best_row[j, k] = best_p[j, k - 1], best_row[j, k - 1]
        best_beta[j, k], best_se[j, k] = best_beta[j, k - 1], best_se[j, k - 1]
        k -= 1
    best_p[j, k], best_row[j, k] = pv, row
    best_beta[j, k], best_se[j, k] = b, s
    kept[j] = min(n + 1, top)
