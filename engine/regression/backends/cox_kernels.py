"""Numba kernels of the CPU backend: fused transform -> scan -> reduce over the sorted rows.

Notation (Yang2022 eqs 13-17, Yang2024 eqs 15-16): D_i = w_i exp(eta_i - shift); for coordinate j
N1_i = x_ij D_i and N2_i = x_ij^2 D_i.  Rows are sorted by stratum then time descending, so the
risk-set sums at the end of each block of tied times are running (prefix) sums that restart at
each stratum head (the flag-value scan of Yang2024 eq. 18, serial here).  With entry times the
risk set {start < t <= stop} is the stop-ordered prefix minus the rows with start >= t, found by
a second pointer walking the rows in start order (``start`` holds the entry times in that
order, ``start[q]`` the entry of row ``start_order[q]``, so the walk reads them in sequence).

Ties: Breslow uses the whole risk set for each of the d tied events; Efron (R's coxph rule with
case weights) uses R - (l/d) E for l = 0..d-1, E the tied events' sums, weighted by their mean
weight.  The per-group factors used below:
    alpha_g = wbar_g * sum_l 1 / den_l,     beta_g = wbar_g * sum_l (l/d) / den_l
(Breslow: alpha_g = W_g / D_R, beta_g = 0), so that the gradient of every coordinate at once is
X^T (w * event - r) with r_k = D_k (sum_{g: k in R_g} alpha_g - event_k beta_{g(k)}).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..row_flags import EVENT, GROUP_END, HEAD


@njit(cache=True, nogil=True)
def update_coordinate(indptr, indices, values, vptr, j, delta, eta, D, w, shift):
    """Sparse update after beta_j += delta (Yang2022 sec. 2.7): O(nnz_j).  Returns max new eta."""
    top = -np.inf
    v0 = vptr[j]
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        x = 1.0 if v0 < 0 else values[v0 + k - indptr[j]]
        eta[i] += delta * x
        D[i] = w[i] * math.exp(eta[i] - shift)
        if eta[i] > top:
            top = eta[i]
    return top


@njit(cache=True, nogil=True)
def coordinate_grad_hess(indptr, indices, values, vptr, j, xs, D, w, flags, efron,
                         has_start, stop, start, start_order, bounds):
    """Gradient dl/dbeta_j and curvature -d2l/dbeta_j^2 in one fused pass (Yang2022 Fig. 2).

    ``xs`` is an all-zero scratch of length n: column j is scattered into it and cleared again.
    """
    v0 = vptr[j]
    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 1.0 if v0 < 0 else values[v0 + k - indptr[j]]

    n = D.size
    R0 = R1 = R2 = 0.0          # risk-set sums of D, x D, x^2 D (stop-ordered prefix)
    S0 = S1 = S2 = 0.0          # the same over rows that entered at or after t (start >= t)
    E0 = E1 = E2 = 0.0          # the tied events' sums
    W = 0.0
    d = 0
    gx = 0.0                    # sum over events of w x
    g = 0.0
    h = 0.0
    stratum = -1
    q = 0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = R1 = R2 = 0.0
            S0 = S1 = S2 = 0.0
            stratum += 1
            q = bounds[stratum]
        x = xs[i]
        di = D[i]
        xd = x * di
        R0 += di
        R1 += xd
        R2 += x * xd
        # branch-free accumulation of the events (their order is unpredictable)
        e = f & EVENT
        we = w[i] * e
        E0 += di * e
        E1 += xd * e
        E2 += x * xd * e
        W += we
        d += e
        gx += we * x
        if f & GROUP_END:
            if has_start and d > 0:
                t = stop[i]
                end = bounds[stratum + 1]
                while q < end and start[q] >= t:
                    r = start_order[q]
                    S0 += D[r]
                    S1 += xs[r] * D[r]
                    S2 += xs[r] * xs[r] * D[r]
                    q += 1
            a0, a1, a2 = R0 - S0, R1 - S1, R2 - S2
            if efron and d > 1:
                wbar = W / d
                for l in range(d):
                    c = l / d
                    den = a0 - c * E0
                    m1 = (a1 - c * E1) / den
                    m2 = (a2 - c * E2) / den
                    g += wbar * m1
                    h += wbar * (m2 - m1 * m1)
            elif d > 0:
                inv = 1.0 / a0
                m1 = a1 * inv
                g += W * m1
                h += W * (a2 * inv - m1 * m1)
            E0 = E1 = E2 = 0.0
            W = 0.0
            d = 0

    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 0.0
    return gx - g, h


@njit(cache=True, nogil=True)
def risk_set_pass(eta, D, w, flags, efron, shift, has_start, stop, start, start_order, bounds,
                  want, groups):
    """Log partial likelihood; with ``want`` >= 1 the gradient in eta, with 2 also its curvature.

    Forward: risk-set sums at each group end give the log-likelihood and per group
        alpha = wbar sum_l 1/den_l,  beta = wbar sum_l c_l/den_l,
        gamma = wbar sum_l 1/den_l^2,  delta = wbar sum_l (1 - c_l)^2/den_l^2.
    Backward (suffix sums within the stratum; minus, with entry times, the groups at or before
    start_k):
        r_k = D_k (A_k - e_k beta_g)                       -> dl/deta_k = w_k e_k - r_k
        h_k = r_k - D_k^2 (G_k - e_k (gamma_g - delta_g))   -> -d2l/deta_k^2 (the diagonal)
    with A_k, G_k the sums of alpha, gamma over the risk sets holding row k.
    ``groups`` (4 x n) is the caller's scratch for alpha, beta, gamma, delta, kept across
    passes: four fresh N-vectors per pass were 1.3 GB of page faults per pass at 10^7 rows.
    """
    n = D.size
    # per-group terms, written at every group end (only group ends are read back)
    alpha, beta, gamma, delta = groups[0], groups[1], groups[2], groups[3]
    ll = 0.0
    R0 = S0 = E0 = W = 0.0
    d = 0
    stratum = -1
    q = 0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = S0 = 0.0
            stratum += 1
            q = bounds[stratum]
        R0 += D[i]
        if f & EVENT:
            E0 += D[i]
            W += w[i]
            d += 1
            ll += w[i] * eta[i]
        if f & GROUP_END:
            alpha[i] = beta[i] = gamma[i] = delta[i] = 0.0
            if d > 0:
                if has_start:
                    t = stop[i]
                    end = bounds[stratum + 1]
                    while q < end and start[q] >= t:
                        S0 += D[start_order[q]]
                        q += 1
                a0 = R0 - S0
                if efron and d > 1:
                    wbar = W / d
                    for l in range(d):
                        c = l / d
                        den = a0 - c * E0
                        ll -= wbar * (math.log(den) + shift)
                        alpha[i] += wbar / den
                        beta[i] += wbar * c / den
                        gamma[i] += wbar / (den * den)
                        delta[i] += wbar * (1.0 - c) * (1.0 - c) / (den * den)
                else:
                    ll -= W * (math.log(a0) + shift)
                    alpha[i] = W / a0
                    gamma[i] = W / (a0 * a0)
                    delta[i] = gamma[i]
            E0 = W = 0.0
            d = 0
    r = np.empty(n if want >= 1 else 0)
    h = np.empty(n if want >= 2 else 0)
    if want >= 1 and not has_start:
        _fused_risk_terms(alpha, beta, gamma, delta, D, flags, bounds, want, r, h)
    elif want >= 1:
        A = _risk_sums(alpha, beta, flags, has_start, stop, start, start_order, bounds)
        for i in range(n):
            r[i] = D[i] * A[i]
        if want >= 2:
            corr = gamma - delta
            G = _risk_sums(gamma, corr, flags, has_start, stop, start, start_order, bounds)
            for i in range(n):
                h[i] = r[i] - D[i] * D[i] * G[i]
    return ll, r, h


@njit(cache=True, nogil=True)
def _fused_risk_terms(alpha, beta, gamma, delta, D, flags, bounds, want, r, h):
    """r (and, for want = 2, h) of risk_set_pass without entry times, in one backward pass:
    the suffix sums of _risk_sums for alpha and gamma side by side, each row's terms formed as
    it is passed (the same operations in the same order, so the same numbers)."""
    for s in range(bounds.size - 1):
        lo, hi = bounds[s], bounds[s + 1]
        acc_a = own_a = acc_g = own_g = 0.0
        for i in range(hi - 1, lo - 1, -1):
            f = flags[i]
            if f & GROUP_END:
                acc_a += alpha[i]
                own_a = beta[i]
                acc_g += gamma[i]
                own_g = gamma[i] - delta[i]
            ev = f & EVENT
            r[i] = D[i] * (acc_a - own_a if ev else acc_a)
            if want >= 2:
                h[i] = r[i] - D[i] * D[i] * (acc_g - own_g if ev else acc_g)


@njit(cache=True, nogil=True)
def _risk_sums(per_group, own_event, flags, has_start, stop, start, start_order, bounds):
    """For each row k: sum of per_group over the risk sets holding k, less own_event of its own
    group when k is an event (Efron's share).  Suffix sums within each stratum."""
    n = per_group.size
    out = np.empty(n)
    for s in range(bounds.size - 1):
        lo, hi = bounds[s], bounds[s + 1]
        acc = 0.0
        own = 0.0
        for i in range(hi - 1, lo - 1, -1):
            if flags[i] & GROUP_END:
                acc += per_group[i]
                own = own_event[i]
            out[i] = acc - own if flags[i] & EVENT else acc
        if has_start:
            # drop the groups with t_g <= start_k: starts ascending against times ascending
            acc = 0.0
            i = hi - 1
            for qq in range(hi - 1, lo - 1, -1):
                k = start_order[qq]
                while i >= lo and stop[i] <= start[qq]:
                    if flags[i] & GROUP_END:
                        acc += per_group[i]
                    i -= 1
                out[k] -= acc
    return out

