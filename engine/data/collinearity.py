"""Aliased covariates: unpenalised columns the likelihood cannot tell from earlier ones.

A column is aliased when the information matrix is singular along it: for Cox and Fine-Gray,
when some combination of it and the columns before it is constant within every risk set that
holds an event (a full set of dummies, x3 = x1 + x2, a covariate constant within every stratum,
a function of time only, a covariate times a period factor on (start, stop] rows, a column that
is zero on every row that enters a risk set); for logistic regression, when it is a combination
of the intercept and earlier columns; for the SCCS, within every case.  The null space of the
information does not depend on beta (it is a weighted covariance with positive weights), so it
is read once, at beta = 0, before solving, as R's coxph reads it (cholesky2 on the first
information matrix).  As R does, the later column of such a set is not estimated (NaN) and is
named.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la

# A column whose information left after projecting on the earlier ones is below this fraction
# of its own information is aliased (R's coxph uses a relative tolerance, toler.chol).
TOLERANCE = 1e-9


def aliased_columns(info: np.ndarray, scale: np.ndarray) -> list[tuple[int, list[int]]]:
    """The aliased columns of an information matrix (their order decides which one goes).

    info : (s, s) observed information of s columns; scale : (s,) the range of each column (a
    column's information is judged empty against its range, so rounding is not mistaken for
    information).  Returns (column, columns it is a combination of) pairs as positions in
    ``info``; an empty list of partners means the column carries no information at all
    (constant within every risk set, or every stratum, or every case).
    """
    info = np.asarray(info, dtype=np.float64)
    s = info.shape[0]
    if s == 0:
        return []
    scale = np.where(np.asarray(scale, np.float64) > 0, scale, 1.0)
    C = info / np.outer(scale, scale)              # information per unit of each column's range
    diag = np.diag(C).copy()
    empty = diag <= TOLERANCE * max(float(diag.max()), np.finfo(float).tiny)
    root = np.sqrt(np.where(empty, 1.0, diag))
    C = C / np.outer(root, root)                   # a correlation matrix on the other columns
    C[empty, :] = 0.0
    C[:, empty] = 0.0
    if not empty.any():
        try:      # the loop below is Cholesky's: when no pivot is small, nothing is aliased
            if np.min(np.diag(la.cholesky(C, lower=True)) ** 2) > TOLERANCE:
                return []
        except la.LinAlgError:
            pass
    L = np.zeros((s, s))                           # Cholesky factor of the kept columns
    kept: list[int] = []
    out = []
    for a in range(s):
        if empty[a]:
            out.append((a, []))
            continue
        m = len(kept)
        y = la.solve_triangular(L[:m, :m], C[kept, a], lower=True) if m else np.zeros(0)
        resid = C[a, a] - y @ y
        if resid <= TOLERANCE:
            weights = la.lstsq(C[np.ix_(kept, kept)], C[kept, a])[0] if m else np.zeros(0)
            out.append((a, [kept[i] for i in np.flatnonzero(np.abs(weights) > 1e-8)]))
            continue
        L[m, :m] = y
        L[m, m] = np.sqrt(resid)
        kept.append(a)
    return out
