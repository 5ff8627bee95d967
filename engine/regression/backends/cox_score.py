"""Numba kernels of the Cox score residuals summed by cluster: the middle of Lin and Wei's (1989,
"The robust inference for the Cox proportional hazards model", JASA 84:1074-1078) sandwich,
by the same risk-set scans as the fit, one O(N) forward and one O(N) backward pass per column
(never a dense X: a column is scattered into a scratch vector and cleared again).

With the fit's risk-set terms r_k = D_k (A_k - e_k beta_g(k)) (cox_kernels.risk_set_pass) and,
for column x, at each group g of tied event times (Efron: l = 0..d-1, c_l = l/d,
den_l = R0 - c_l E0, m_l = (R1 - c_l E1)/den_l; Breslow: one term, c = 0)

    xbar_g = mean_l m_l,   H_g = wbar sum_l m_l / den_l,   O_g = wbar sum_l c_l m_l / den_l,

the weighted score residual of row k (R survival's coxscore2, Efron's dying rows exposed to the
reduced increments) is

    U_k = w_k e_k (x_k - xbar_g(k)) - r_k x_k + D_k (sum_{g: k in R_g} H_g - e_k O_g(k)),

and sum_k U_k is the gradient.  A cluster's score is the sum of U_k over its rows.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..row_flags import EVENT, GROUP_END, HEAD


@njit(cache=True, nogil=True)
def _column_scores(indptr, indices, values, vptr, j, D, w, r, flags, efron, has_start, stop,
                   start, start_order, bounds, codes, out, xs, hx, ho, xb, B):
    """Cluster sums of column j's score residuals added into ``out`` (one per cluster).
    ``xs`` is an all-zero scratch of length n (left zero); hx, ho, xb, B are scratch."""
    v0 = vptr[j]
    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 1.0 if v0 < 0 else values[v0 + k - indptr[j]]
    n = D.size
    R0 = R1 = S0 = S1 = E0 = E1 = W = 0.0
    d = 0
    stratum = -1
    q = 0
    for i in range(n):                          # forward: the group terms at each group end
        f = flags[i]
        if f & HEAD:
            R0 = R1 = S0 = S1 = 0.0
            stratum += 1
            q = bounds[stratum]
        x = xs[i]
        R0 += D[i]
        R1 += x * D[i]
        if f & EVENT:
            E0 += D[i]
            E1 += x * D[i]
            W += w[i]
            d += 1
        if f & GROUP_END:
            hx[i] = ho[i] = xb[i] = 0.0
            if d > 0:
                if has_start:
                    t = stop[i]
                    end = bounds[stratum + 1]
                    while q < end and start[q] >= t:
                        rr = start_order[q]
                        S0 += D[rr]
                        S1 += xs[rr] * D[rr]
                        q += 1
                a0, a1 = R0 - S0, R1 - S1
                if efron and d > 1:
                    wbar = W / d
                    for l in range(d):
                        c = l / d
                        den = a0 - c * E0
                        m = (a1 - c * E1) / den
                        xb[i] += m / d
                        hx[i] += wbar * m / den
                        ho[i] += wbar * c * m / den
                else:
                    m = a1 / a0
                    xb[i] = m
                    hx[i] = W * m / a0
            E0 = E1 = W = 0.0
            d = 0
    for s in range(bounds.size - 1):            # backward: sums of H over the risk sets
        lo, hi = bounds[s], bounds[s + 1]
        acc = own = mean = 0.0
        for i in range(hi - 1, lo - 1, -1):
            if flags[i] & GROUP_END:
                acc += hx[i]
                own = ho[i]
                mean = xb[i]
            if flags[i] & EVENT:
                B[i] = acc - own
                xb[i] = mean                    # the row's own group mean (read below)
            else:
                B[i] = acc
        if has_start:                           # less the groups at or before entry
            acc = 0.0
            i = hi - 1
            for qq in range(hi - 1, lo - 1, -1):
                k = start_order[qq]
                while i >= lo and stop[i] <= start[qq]:
                    if flags[i] & GROUP_END:
                        acc += hx[i]
                    i -= 1
                B[k] -= acc
    for i in range(n):
        u = D[i] * B[i] - r[i] * xs[i]
        if flags[i] & EVENT:
            u += w[i] * (xs[i] - xb[i])
        out[codes[i]] += u
    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 0.0


@njit(cache=True, nogil=True)
def _columns_scores(indptr, indices, values, vptr, cols, lo, hi, D, w, r, flags, efron,
                    has_start, stop, start, start_order, bounds, codes, out):
    n = D.size
    xs = np.zeros(n)
    hx, ho, xb, B = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for c in range(lo, hi):
        _column_scores(indptr, indices, values, vptr, cols[c], D, w, r, flags, efron,
                       has_start, stop, start, start_order, bounds, codes, out[c], xs, hx, ho,
                       xb, B)


@njit(cache=True, nogil=True)
def cluster_scores(indptr, indices, values, vptr, cols, D, w, r, flags, efron, has_start, stop,
                   start, start_order, bounds, codes, n_clusters):
    """(len(cols), n_clusters): row c holds the cluster sums of column cols[c]'s score
    residuals.  ``codes`` are the cluster codes of the sorted rows."""
    out = np.zeros((cols.size, n_clusters))
    _columns_scores(indptr, indices, values, vptr, cols, 0, cols.size, D, w, r, flags, efron,
                    has_start, stop, start, start_order, bounds, codes, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def cluster_scores_parallel(indptr, indices, values, vptr, cols, D, w, r, flags, efron,
                            has_start, stop, start, start_order, bounds, codes, n_clusters,
                            pieces):
    """cluster_scores with the columns split at ``pieces`` (boundaries fixed by the data), one
    piece per task: each column is summed alone, so the numbers equal the serial kernel's."""
    out = np.zeros((cols.size, n_clusters))
    for t in prange(pieces.size - 1):
        _columns_scores(indptr, indices, values, vptr, cols, pieces[t], pieces[t + 1], D, w,
                        r, flags, efron, has_start, stop, start, start_order, bounds, codes,
                        out)
    return out
