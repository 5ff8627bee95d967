"""Aliased covariates: unpenalised columns that are linear combinations of earlier ones.

A Cox likelihood does not change when a column shifts by a constant within a stratum, so a
column is aliased when, after centring within strata, it lies in the span of the columns before
it (a full set of dummies, x3 = x1 + x2, a covariate constant within every stratum).  As R's
coxph does, the later column of such a set is not estimated (reported as NaN) and is named.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from .weighted_gram import CHUNK, weighted_gram

# A column whose variance left after projecting on the earlier ones is below this fraction of
# its own variance is aliased (R's coxph uses a similar relative tolerance, toler.chol).
TOLERANCE = 1e-9


def aliased_columns(cohort, cols: np.ndarray) -> list[tuple[int, list[int]]]:
    """The aliased columns among ``cols`` (their order decides which one goes).

    Returns (column, columns it is a combination of) pairs, as indices into ``cohort.X``; an
    empty list of partners means the column is constant within every stratum.
    """
    cols = np.asarray(cols, dtype=np.int64)
    if cols.size == 0:
        return []
    C = _centred_gram(cohort, cols)
    scale = np.sqrt(np.maximum(np.diag(C), 0.0))
    scale[scale == 0] = 1.0
    C = C / np.outer(scale, scale)                 # a correlation matrix (0 on constant columns)
    try:      # the loop below is Cholesky's: when no pivot is small, nothing is aliased
        if np.min(np.diag(la.cholesky(C, lower=True)) ** 2) > TOLERANCE:
            return []
    except la.LinAlgError:
        pass
    L = np.zeros((cols.size, cols.size))           # Cholesky factor of the kept columns
    kept: list[int] = []
    out = []
    for a in range(cols.size):
        m = len(kept)
        y = la.solve_triangular(L[:m, :m], C[kept, a], lower=True) if m else np.zeros(0)
        resid = C[a, a] - y @ y
        if resid <= TOLERANCE:
            weights = la.lstsq(C[np.ix_(kept, kept)], C[kept, a])[0] if m else np.zeros(0)
            out.append((int(cols[a]),
                        [int(cols[kept[i]]) for i in np.flatnonzero(np.abs(weights) > 1e-8)]))
            continue
        L[m, :m] = y
        L[m, m] = np.sqrt(resid)
        kept.append(a)
    return out


def _centred_gram(cohort, cols):
    """sum over strata k of X_k' W X_k - (X_k' w)(w' X_k) / sum(w_k), with case weights w."""
    X = sp.csc_matrix(cohort.X)
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    strata = np.zeros(cohort.n, np.int64) if cohort.strata is None else np.asarray(cohort.strata)
    S = sp.csc_matrix((w, (np.arange(cohort.n), strata)), shape=(cohort.n, strata.max() + 1))
    totals = np.asarray(S.sum(axis=0)).ravel()
    sums = sp.csr_matrix(X[:, cols].T @ S)       # (X_k' w) for every stratum k, one per column
    inv = sp.diags(np.where(totals > 0, 1.0 / np.where(totals > 0, totals, 1.0), 0.0))
    gram = weighted_gram(X.indptr, X.indices, X.data.astype(np.float64, copy=False),
                         X.indptr[:-1].astype(np.int64), cols, w, CHUNK)
    return gram - (sums @ inv @ sums.T).toarray()
