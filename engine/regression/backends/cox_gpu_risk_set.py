"""The log-likelihood pass (loglik, r = the gradient's weights in eta, h = its diagonal
curvature) as array operations and segmented scans, for any NumPy-like module.

The same algebra as cox_kernels.risk_set_pass, reorganised for a device: the forward risk-set
sums are one segmented scan (Yang2024 eq. 18) read at the tie groups' ends; Efron's terms are
laid out flat (gpu_layout.EventGroups), so the per-group factors
    alpha = sum wt/den,  beta = sum wt c/den,  gamma = sum wt/den^2,  delta = sum wt (1-c)^2/den^2
are one segmented scan over the terms; the backward sums A_k, G_k over the risk sets holding
row k are suffix scans within strata, less the own group's share for events and, with entry
times, less the suffix from the first risk set that no longer holds k (entered_after).

``xp`` is cupy on the GPU (``scan`` its segmented-scan kernels) and numpy with
flag_scan_reference.segmented_scan in the CPU tests that pin this code to the Numba kernels.
``scan(cols, flags, bit, reverse)`` scans the rows of cols (c x n) in segments starting where
flags & bit.
"""
from __future__ import annotations

from ..row_flags import EVENT, GROUP_HEAD, HEAD, STRATUM_TAIL


def _denominators(xp, scan, lay, groups, D, flags, start_order):
    """The event indicator per row and each Efron term's denominator R0 - S0 - c E0."""
    ev = ((flags & EVENT) != 0).astype(D.dtype)
    ends, tg = groups.ends, groups.term_group
    R0 = scan(D[None], lay.flags, HEAD, False)[0][ends]
    E0 = scan((ev * D)[None], lay.flags, GROUP_HEAD, False)[0][ends]
    a0 = R0
    if start_order is not None:
        S = scan(D[start_order][None], lay.start_heads, HEAD, False)[0]
        late = lay.late[ends]
        a0 = R0 - xp.where(late >= 0, S[late], 0.0)
    return ev, a0[tg] - groups.term_c * E0[tg]


def risk_set_pass(xp, scan, lay, groups, eta, D, w, flags, shift, start_order, want):
    """(ll, r, h) as cox_kernels.risk_set_pass; r and h are empty unless ``want`` >= 1, 2.

    lay, groups: gpu_layout.Layout and EventGroups with arrays already in ``xp``;
    flags: the current flags (EVENT cleared for zero weights); start_order None without entry
    times.
    """
    ev, den = _denominators(xp, scan, lay, groups, D, flags, start_order)
    ends = groups.ends
    c, wt = groups.term_c, groups.term_wt
    ll = float(xp.sum(w * ev * eta) - xp.sum(wt * (xp.log(den) + shift)))
    n = D.size
    if want < 1:
        return ll, xp.empty(0, D.dtype), xp.empty(0, D.dtype)
    terms = xp.stack((wt / den, wt * c / den, wt / (den * den),
                      wt * (1.0 - c) * (1.0 - c) / (den * den)))
    alpha, beta, gamma, delta = scan(terms, groups.term_heads, HEAD, False)[:, groups.term_last]
    per_group = xp.zeros((2, n), D.dtype)
    per_group[:, ends] = xp.stack((alpha, gamma))
    own = xp.zeros((2, n), D.dtype)
    own[:, ends] = xp.stack((beta, gamma - delta))
    suffix = scan(per_group, lay.flags, STRATUM_TAIL, True)
    sums = suffix - ev * own[:, lay.group_end_of]
    if start_order is not None:
        after = lay.entered_after
        sums = sums - xp.where(after >= 0, suffix[:, after], 0.0)
    A, G = sums
    r = D * A
    h = r - D * D * G if want >= 2 else xp.empty(0, D.dtype)
    return ll, r, h


def hazard_increments(xp, scan, lay, groups, D, w, flags, start_order):
    """The baseline hazard's pieces at each tie group with events (engine.regression.baseline,
    over D = w exp(eta - shift) instead of its r: the caller rescales), one segmented scan
    over Efron's terms (d terms (l/d, W/d) a group; one (0, W) for Breslow):

        dH = sum wt/den,  dV = sum wt/den^2,  e = sum wt c/den^2,  own = sum wt (1-c)/den,
        n_event = sum wt

    and the summed weights at risk, the risk-set scan of w read at the groups' ends (less the
    rows not yet entered).  Returns a (6, groups) array: dH, dV, e, own, n_event, n_risk."""
    ev, den = _denominators(xp, scan, lay, groups, D, flags, start_order)
    c, wt = groups.term_c, groups.term_wt
    terms = xp.stack((wt / den, wt / (den * den), wt * c / (den * den), wt * (1.0 - c) / den,
                      wt))
    sums = scan(terms, groups.term_heads, HEAD, False)[:, groups.term_last]
    at_risk = scan(w[None], lay.flags, HEAD, False)[0][groups.ends]
    if start_order is not None:
        entered = scan(w[start_order][None], lay.start_heads, HEAD, False)[0]
        late = lay.late[groups.ends]
        at_risk = at_risk - xp.where(late >= 0, entered[late], 0.0)
    return xp.concatenate((sums, at_risk[None]))


def weighted_gram(xp, Xs, w, chunk_bytes=2 ** 28):
    """X^T diag(w) X of the columns of Xs (n x s, CSC, scipy or cupyx), dense s x s, as dense
    products of row chunks of about ``chunk_bytes``.  Not the sparse-sparse product: cuSPARSE's
    SpGEMM ran out of resources ("INSUFFICIENT_RESOURCES") at 10^6 rows x 1,000 columns on an
    H100, and a dense GEMM per chunk is faster there anyway."""
    n, s = Xs.shape
    step = max(1, chunk_bytes // (8 * max(s, 1)))
    F = None
    for lo, B in dense_row_chunks(xp, Xs, step):
        part = B.T @ (B * w[lo:lo + B.shape[0], None])
        F = part if F is None else F + part
    return xp.zeros((s, s), w.dtype) if F is None else F


def dense_row_chunks(xp, Xs, step):
    """(first row, dense rows x s block) for each run of ``step`` rows of Xs (n x s, CSC),
    scattered from its non-zeros ordered by row once.  Not cupyx's CSR slices and toarray:
    its toarray copies the slice and sorts it through COO (sum_duplicates) at every call,
    most of the Gram matrices' time in cross-validation at 10^6 rows on an H200."""
    n, s = Xs.shape
    nnz = int(Xs.indptr[-1])
    at = xp.arange(nnz, dtype="int64")
    col = xp.searchsorted(xp.asarray(Xs.indptr[1:], "int64"), at, side="right")
    row = xp.asarray(Xs.indices, "int64")
    order = xp.argsort(row)
    row, col, val = row[order], col[order], xp.asarray(Xs.data)[order]
    bounds = xp.searchsorted(row, xp.arange(0, n + step, step, dtype="int64")).tolist()
    for k, lo in enumerate(range(0, n, step)):
        a, b = bounds[k], bounds[k + 1]
        B = xp.zeros((min(step, n - lo), s), val.dtype)
        B[row[a:b] - lo, col[a:b]] = val[a:b]
        yield lo, B


def dense_columns(xp, Xs, a, b):
    """Columns a..b-1 of Xs (n x s, CSC) as a dense (b - a) x n array: their non-zeros are
    one contiguous run, scattered directly (no cupyx toarray, see dense_row_chunks)."""
    n = Xs.shape[0]
    ptr = xp.asarray(Xs.indptr[a:b + 1], "int64")
    lo, hi = int(ptr[0]), int(ptr[-1])
    at = xp.arange(lo, hi, dtype="int64")
    col = xp.searchsorted(ptr[1:], at, side="right")
    out = xp.zeros((b - a, n), Xs.data.dtype)
    out[col, xp.asarray(Xs.indices[lo:hi], "int64")] = Xs.data[lo:hi]
    return out


def information_matrix(xp, scan, lay, groups, Xs, r, D, flags, start_order,
                       chunk_bytes=2 ** 28):
    """Observed information of the columns of Xs (CSC over the sorted rows, scipy.sparse or
    cupyx.scipy.sparse) as cox_information.information: sum_k r_k x_k x_k^T (one sparse
    product) minus T T^T, T holding each Efron term's sqrt(wt) m (``_term_means``), chunks of
    columns at a time.  T is s x (Efron terms): memory grows with columns times events."""
    ev, den = _denominators(xp, scan, lay, groups, D, flags, start_order)
    F = weighted_gram(xp, Xs, r, chunk_bytes)
    s, n = Xs.shape[1], D.size
    T = xp.empty((s, groups.term_group.size), D.dtype)
    step = max(1, chunk_bytes // (8 * max(n, 1)))
    for a in range(0, s, step):
        T[a:a + step] = _term_means(xp, scan, lay, groups,
                                    dense_columns(xp, Xs, a, min(a + step, s)) * D, ev, den,
                                    start_order)
    return F - T @ T.T


def direction_curvature(xp, scan, lay, groups, U, r, D, flags, start_order):
    """-d2l along the eta-space directions in the rows of U (m x n, dense, sorted rows): the
    information of the columns U^T, as cox_subspace.direction_curvature (the plane step)."""
    ev, den = _denominators(xp, scan, lay, groups, D, flags, start_order)
    T = _term_means(xp, scan, lay, groups, U * D, ev, den, start_order)
    return (U * r) @ U.T - T @ T.T


def _term_means(xp, scan, lay, groups, Z, ev, den, start_order):
    """sqrt(wt) m per Efron term for each row of Z = x o D (c x n) (``_risk_set_means``)."""
    return xp.sqrt(groups.term_wt) * _risk_set_means(xp, scan, lay, groups, Z, ev, den,
                                                     start_order)


def _risk_set_means(xp, scan, lay, groups, Z, ev, den, start_order):
    """m = (R1 - S1 - c E1) / den per Efron term for each row of Z = x o D (c x n): the
    risk-set mean of x, from segmented scans (c x terms)."""
    ends, tg = groups.ends, groups.term_group
    R1 = scan(Z, lay.flags, HEAD, False)[:, ends]
    E1 = scan(Z * ev, lay.flags, GROUP_HEAD, False)[:, ends]
    if start_order is not None:
        S1 = scan(Z[:, start_order], lay.start_heads, HEAD, False)
        late = lay.late[ends]
        R1 = R1 - xp.where(late >= 0, S1[:, late], 0.0)
    return (R1[:, tg] - groups.term_c * E1[:, tg]) / den


def score_residuals(xp, scan, lay, groups, X, r, D, w, flags, start_order):
    """The weighted score residuals U (c x n, sorted rows) of the columns in the rows of X
    (dense c x n), as cox_score's kernel computes them one column at a time (Lin and Wei 1989;
    R's coxscore2 for Efron):

        U_k = w_k e_k (x_k - xbar_g(k)) - r_k x_k + D_k (sum_{g: k in R_g} H_g - e_k O_g(k)),

    xbar_g the mean over g's Efron terms of m, H_g = sum wt m / den, O_g = sum wt c m / den
    (one segmented scan over the terms), and the sums of H over the risk sets holding k the
    suffix scans of ``risk_set_pass``.  sum_k U_k is the gradient."""
    ev, den = _denominators(xp, scan, lay, groups, D, flags, start_order)
    m = _risk_set_means(xp, scan, lay, groups, X * D, ev, den, start_order)
    c, wt, ends = groups.term_c, groups.term_wt, groups.ends
    k, n = X.shape
    per_term = xp.concatenate((m, wt * m / den, wt * c * m / den))
    last = groups.term_last
    sums = scan(per_term, groups.term_heads, HEAD, False)[:, last]
    mean_sum, H, O = sums[:k], sums[k:2 * k], sums[2 * k:]
    count = xp.concatenate((last[:1] + 1, last[1:] - last[:-1])) if last.size else last
    at_ends = xp.zeros((3 * k, n), D.dtype)
    at_ends[:, ends] = xp.concatenate((H, O, mean_sum / count))
    suffix = scan(at_ends[:k], lay.flags, STRATUM_TAIL, True)
    own = at_ends[k:, lay.group_end_of]
    B = suffix - ev * own[:k]
    if start_order is not None:
        after = lay.entered_after
        B = B - xp.where(after >= 0, suffix[:, after], 0.0)
    return D * B - r * X + ev * w * (X - own[k:])
