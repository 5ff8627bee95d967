"""ModelData: a cohort laid out for the risk-set scans.

Rows are sorted by stratum, then by follow-up (stop) time descending, so every risk-set sum of
the Cox partial likelihood is a prefix sum (seed 001 eqs 13-17) and K strata are one scan whose
segments start at the head flags (seed 000 sec. 2.6-2.7).  The covariates are re-indexed to the
sorted row positions, column by column (CSC), so a coordinate touches only its non-zeros; binary
indicator columns store no values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

# Bit flags packed into one byte per sorted row.
EVENT = np.uint8(1)  # the row ends with the event of interest
HEAD = np.uint8(2)   # first row of a stratum: the scan restarts here
GROUP_END = np.uint8(4)  # last row of a block of equal times within a stratum


@dataclass
class ModelData:
    """Arrays in sorted row order, shared by every backend.

    Attributes
    ----------
    order : (n,) int64, sorted position -> caller's row
    stop, weights : (n,) float64
    flags : (n,) uint8, EVENT | HEAD | GROUP_END bits
    indptr : (p + 1,) int64; indices : (nnz,) int32/int64, sorted row positions per column
    values : (nnz_nonbinary,) float64; vptr : (p,) int64 offset of column j in values, -1 if binary
    strata_bounds : (K + 1,) int64, stratum k occupies sorted rows [bounds[k], bounds[k+1])
    start : (n,) float64 or None, entry times (counting process), in sorted order
    start_order : (n,) int64 or None, sorted positions ordered by stratum, start descending
    """

    order: np.ndarray
    stop: np.ndarray
    weights: np.ndarray
    flags: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    vptr: np.ndarray
    strata_bounds: np.ndarray
    start: np.ndarray | None
    start_order: np.ndarray | None
    names: list

    @property
    def n(self) -> int:
        return self.order.size

    @property
    def p(self) -> int:
        return self.indptr.size - 1

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted row positions and values of column j (values are ones for binary columns)."""
        rows = self.indices[self.indptr[j]:self.indptr[j + 1]]
        if self.vptr[j] < 0:
            return rows, np.ones(rows.size)
        return rows, self.values[self.vptr[j]:self.vptr[j] + rows.size]

    def to_sorted(self, v: np.ndarray) -> np.ndarray:
        """A per-row array of the caller's order, in sorted order."""
        return np.asarray(v)[self.order]


def build(cohort, event: np.ndarray | None = None) -> ModelData:
    """Sort a validated cohort for the scans.

    Parameters
    ----------
    cohort : engine.Cohort
    event : (n,) 0/1 array, optional
        Which rows count as events (default: ``cohort.event > 0``); Fine-Gray passes one cause.
    """
    n = cohort.n
    stop = np.asarray(cohort.time, dtype=np.float64)
    ev = (np.asarray(cohort.event) > 0) if event is None else np.asarray(event, dtype=bool)
    strata = np.zeros(n, np.int64) if cohort.strata is None else np.asarray(cohort.strata, np.int64)
    w = np.ones(n) if cohort.weights is None else np.asarray(cohort.weights, np.float64)

    order = np.lexsort((-stop, strata))
    s_sorted, t_sorted = strata[order], stop[order]
    # a zero-weight row is absent: no event, and D = w exp(eta) = 0 keeps it out of risk sets
    flags = np.where(ev[order] & (w[order] > 0), EVENT, np.uint8(0)).astype(np.uint8)
    new_stratum = np.empty(n, bool)
    new_stratum[0] = True
    new_stratum[1:] = s_sorted[1:] != s_sorted[:-1]
    flags[new_stratum] |= HEAD
    group_end = np.empty(n, bool)
    group_end[-1] = True
    group_end[:-1] = new_stratum[1:] | (t_sorted[1:] != t_sorted[:-1])
    flags[group_end] |= GROUP_END
    bounds = np.append(np.flatnonzero(new_stratum), n).astype(np.int64)

    indptr, indices, values, vptr = _sorted_columns(cohort.X, order, np.asarray(cohort.binary))

    start = start_order = None
    if cohort.start is not None:
        start = np.asarray(cohort.start, np.float64)[order]
        start_order = np.lexsort((-start, s_sorted)).astype(np.int64)

    return ModelData(order=order.astype(np.int64), stop=t_sorted, weights=w[order], flags=flags,
                     indptr=indptr, indices=indices, values=values, vptr=vptr,
                     strata_bounds=bounds, start=start, start_order=start_order,
                     names=list(cohort.names))


def _sorted_columns(X, order, binary):
    """CSC columns with row indices replaced by sorted positions (ascending within a column)."""
    Xs = sp.csr_matrix(X)[order].tocsc()
    Xs.sort_indices()
    indptr = Xs.indptr.astype(np.int64)
    counts = np.diff(indptr)
    keep = np.repeat(~binary, counts)
    values = np.ascontiguousarray(Xs.data[keep], dtype=np.float64)
    starts = np.concatenate(([0], np.cumsum(np.where(binary, 0, counts))[:-1]))
    vptr = np.where(binary, -1, starts).astype(np.int64)
    return indptr, Xs.indices, values, vptr
