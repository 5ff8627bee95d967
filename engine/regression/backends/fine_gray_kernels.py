"""Numba kernels of the Fine-Gray pseudo-likelihood: forward (prefix) plus backward (suffix) scans.

Rows are sorted by stratum then time descending (engine.modeldata); EVENT marks the cause-k
events.  Per row, omega_r = 1/G(Y_r-) for rows ending with a competing event (0 otherwise) and
gl_r = G(Y_r-), the left limit of the censoring Kaplan-Meier at the row's own time; at a group
end gl is G(t_g-).  The risk set at a cause-k event time t_g (Yang2022 sec. 2.2, eq. 7) is

    R(t_g) = R1(g) + R2(g),  R1(g) = {y_r >= t_g} (weight 1),
                             R2(g) = {y_r < t_g, competing} (weight G(t_g-)/G(y_r-)),

so with D_r = w_r exp(eta_r - shift) and x = column j (Yang2022 eqs 18-20)

    den_g = S_pre[D](g) + Gt_g S_suf[omega D](g)
    N1_g  = S_pre[x D](g) + Gt_g S_suf[omega x D](g),  N2_g likewise with x^2,

S_pre the prefix up to the group end, S_suf the suffix over the rows after it (smaller times) in
the same stratum.  Ties are Breslow's (as cmprsk::crr): W_g, the summed case weight of the
cause-k events at t_g, multiplies one term per group; alpha_g = W_g / den_g.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..row_flags import EVENT, GROUP_END, HEAD


@njit(cache=True, nogil=True)
def competing_suffix(D, omega, flags, bounds, suf):
    """Backward scan: at each group end i, suf[i] = sum of omega D over the rows after i in
    its stratum (S_suf[omega D] of eq. 19's denominator).  Other entries are left as they are."""
    for s in range(bounds.size - 1):
        acc = 0.0
        for i in range(bounds[s + 1] - 1, bounds[s] - 1, -1):
            if flags[i] & GROUP_END:
                suf[i] = acc
            acc += omega[i] * D[i]


@njit(cache=True, nogil=True)
def fine_gray_pass(eta, D, w, flags, omega, gl, shift, bounds, suf, want):
    """Log pseudo-likelihood (eq. 7, Breslow ties); with ``want`` >= 1 the gradient in eta, with
    2 also the diagonal of the curvature.

    Three scans, each O(N): backward for S_suf[omega D] (into ``suf``), forward for den_g,
    alpha_g = W_g/den_g, gamma_g = W_g/den_g^2 and the prefix sums over the groups before row k
    (t_g > y_k: the groups in which a competing row k sits in R2)

        B_k = sum alpha_g Gt_g,   Gam2_k = sum gamma_g Gt_g^2,

    then backward for the suffix sums over the groups whose R1 holds row k (t_g <= y_k)

        A_k = sum alpha_g,        Gam_k = sum gamma_g,

    giving  r_k = D_k (A_k + omega_k B_k)                       -> dl/deta_k = w_k e_k - r_k
            h_k = r_k - D_k^2 (Gam_k + omega_k^2 Gam2_k)        -> -d2l/deta_k^2.
    """
    n = D.size
    competing_suffix(D, omega, flags, bounds, suf)
    alpha = np.zeros(n if want >= 1 else 0)
    gamma = np.zeros(n if want >= 2 else 0)
    B = np.zeros(n if want >= 1 else 0)
    G2 = np.zeros(n if want >= 2 else 0)
    ll = 0.0
    R0 = W = b = g2 = 0.0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = b = g2 = 0.0
        if want >= 1:
            B[i] = b
            if want >= 2:
                G2[i] = g2
        R0 += D[i]
        if f & EVENT:
            W += w[i]
            ll += w[i] * eta[i]
        if f & GROUP_END:
            if W > 0.0:
                gt = gl[i]
                den = R0 + gt * suf[i]
                ll -= W * (math.log(den) + shift)
                if want >= 1:
                    a = W / den
                    alpha[i] = a
                    b += a * gt
                    if want >= 2:
                        gamma[i] = a / den
                        g2 += a / den * gt * gt
            W = 0.0
    r = np.empty(n if want >= 1 else 0)
    h = np.empty(n if want >= 2 else 0)
    if want >= 1:
        for s in range(bounds.size - 1):
            A = Gm = 0.0
            for i in range(bounds[s + 1] - 1, bounds[s] - 1, -1):
                if flags[i] & GROUP_END:
                    A += alpha[i]
                    if want >= 2:
                        Gm += gamma[i]
                r[i] = D[i] * (A + omega[i] * B[i])
                if want >= 2:
                    h[i] = r[i] - D[i] * D[i] * (Gm + omega[i] * omega[i] * G2[i])
    return ll, r, h


@njit(cache=True, nogil=True)
def coordinate_grad_hess(indptr, indices, values, vptr, j, xs, D, w, flags, omega, gl, bounds,
                         suf0, suf1, suf2):
    """Gradient dl/dbeta_j and curvature -d2l/dbeta_j^2 (Yang2022 eqs 19-20, Breslow ties).

    A backward scan stores the suffix sums S_suf[omega D], S_suf[omega x D], S_suf[omega x^2 D]
    at the group ends into the preallocated scratch ``suf0..2`` (length n), then one forward
    scan forms the prefix sums and, at each group end, the eq. 19-20 ratios.  Storing the
    suffixes (rather than a stratum total minus the prefix) keeps every sum a sum of the terms
    it contains: no cancellation when the remaining suffix is small against the total, as it is
    at the earliest event times.  ``xs`` is an all-zero scratch of length n: column j is
    scattered into it and cleared again.
    """
    v0 = vptr[j]
    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 1.0 if v0 < 0 else values[v0 + k - indptr[j]]
    n = D.size
    for s in range(bounds.size - 1):
        T0 = T1 = T2 = 0.0
        for i in range(bounds[s + 1] - 1, bounds[s] - 1, -1):
            if flags[i] & GROUP_END:
                suf0[i] = T0
                suf1[i] = T1
                suf2[i] = T2
            od = omega[i] * D[i]
            if od != 0.0:
                x = xs[i]
                T0 += od
                T1 += x * od
                T2 += x * x * od
    R0 = R1 = R2 = 0.0
    W = 0.0
    gx = 0.0
    g = 0.0
    h = 0.0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = R1 = R2 = 0.0
        x = xs[i]
        di = D[i]
        xd = x * di
        R0 += di
        R1 += xd
        R2 += x * xd
        if f & EVENT:
            W += w[i]
            gx += w[i] * x
        if f & GROUP_END:
            if W > 0.0:
                gt = gl[i]
                den = R0 + gt * suf0[i]
                m1 = (R1 + gt * suf1[i]) / den
                m2 = (R2 + gt * suf2[i]) / den
                g += W * m1
                h += W * (m2 - m1 * m1)
            W = 0.0
    for k in range(indptr[j], indptr[j + 1]):
        xs[indices[k]] = 0.0
    return gx - g, h


@njit(cache=True, nogil=True)
def event_outer_products(rp, rc, rv, s, D, w, flags, omega, gl, bounds, suf, chunk):
    """Sum over event groups of W_g m_g m_g^T, m_g = (N1_R1(g) + Gt_g N1_suf(g)) / den_g the
    risk-set mean of the s chosen columns (the second term of the information matrix).

    The columns come as CSR over the sorted rows (rp, rc, rv); ``suf`` holds S_suf[omega D] at
    the group ends (from ``competing_suffix``).  The vector suffix N1_suf is the stratum total
    of omega x D minus its running prefix: storing an s-vector per group would cost
    O(groups * s) memory, and a total is one extra O(nnz) sweep of the stratum.  Rows
    sqrt(W_g) m_g go to a buffer folded in with one BLAS product per ``chunk`` rows.
    """
    n = D.size
    M = np.zeros((s, s))
    buf = np.zeros((chunk, s))
    nb = 0
    R1 = np.zeros(s)
    P1 = np.zeros(s)
    T1 = np.zeros(s)
    R0 = W = 0.0
    stratum = -1
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            stratum += 1
            R0 = 0.0
            R1[:] = 0.0
            P1[:] = 0.0
            T1[:] = 0.0
            for q in range(bounds[stratum], bounds[stratum + 1]):
                od = omega[q] * D[q]
                if od != 0.0:
                    for k in range(rp[q], rp[q + 1]):
                        T1[rc[k]] += rv[k] * od
        di = D[i]
        od = omega[i] * di
        R0 += di
        for k in range(rp[i], rp[i + 1]):
            R1[rc[k]] += rv[k] * di
            P1[rc[k]] += rv[k] * od
        if f & EVENT:
            W += w[i]
        if f & GROUP_END:
            if W > 0.0:
                gt = gl[i]
                den = R0 + gt * suf[i]
                sc = math.sqrt(W) / den
                for a in range(s):
                    buf[nb, a] = sc * (R1[a] + gt * (T1[a] - P1[a]))
                nb += 1
                if nb == chunk:
                    M += buf.T @ buf
                    nb = 0
            W = 0.0
    if nb > 0:
        M += buf[:nb].T @ buf[:nb]
    return M
