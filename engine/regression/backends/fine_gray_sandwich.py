"""Numba kernels of Fine & Gray's (1999, sec. 3) sandwich variance, O(N s) for s columns.

    V = I^-1 (sum_i u_i u_i^T) I^-1,    u_i = eta_i + psi_i,

eta_i the subject's score residual and psi_i the term from estimating G, as cmprsk::crr
computes them (its Fortran crrvv does it in O(N^2)).  Same sorted layout, omega and gl as in
fine_gray_kernels; X is a dense (n, s) block of the chosen columns over the sorted rows.  Case
weights multiply each subject's terms (sampling weights, as coxph's robust variance).

With the group means m_g = N1_g/den_g and alpha_g = W_g/den_g (the Breslow increment of the
baseline subdistribution hazard),

    eta_i = w_i e_i (x_i - m_g(i)) - D_i sum_{g: i in R1(g)} alpha_g (x_i - m_g)
                                   - D_i omega_i sum_{g: t_g > y_i} alpha_g Gt_g (x_i - m_g),

and with the censoring martingales of the censoring Kaplan-Meier (Y_c(u) the weighted number
at risk and dC_c(u) the weighted censorings at u in censoring group c)

    psi_i = w_i [ c_i q_c(y_i) / Y_c(y_i) - sum_{u <= y_i} q_c(u) dC_c(u) / Y_c(u)^2 ],
    q_c(u) = sum over pairs (competing j in c, cause-k group g of j's stratum) with
             y_j < u <= t_g of  alpha_g Gt_g D_j omega_j (x_j - m_g).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..row_flags import EVENT, GROUP_END, HEAD


@njit(cache=True, nogil=True)
def group_means(X, D, w, flags, omega, gl, bounds, suf):
    """alpha_g at each group end (n,) and the risk-set means m_g, one row per group end
    (n_group_ends, s), in sorted order (Yang2022 eq. 19 for all s columns at once).

    A backward scan writes the suffix S_suf[omega x D] of each group end into its row of the
    output, then the forward scan turns it into the mean: exact suffix sums, no subtraction.
    ``suf`` holds S_suf[omega D] at the group ends.
    """
    n, s = X.shape
    ends = 0
    for i in range(n):
        if flags[i] & GROUP_END:
            ends += 1
    M = np.zeros((ends, s))
    alpha = np.zeros(n)
    T1 = np.zeros(s)
    g = ends
    for st in range(bounds.size - 2, -1, -1):
        T1[:] = 0.0
        for i in range(bounds[st + 1] - 1, bounds[st] - 1, -1):
            if flags[i] & GROUP_END:
                g -= 1
                M[g] = T1
            od = omega[i] * D[i]
            if od != 0.0:
                T1 += od * X[i]
    R1 = np.zeros(s)
    R0 = W = 0.0
    g = 0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = 0.0
            R1[:] = 0.0
        R0 += D[i]
        R1 += D[i] * X[i]
        if f & EVENT:
            W += w[i]
        if f & GROUP_END:
            den = R0 + gl[i] * suf[i]
            if W > 0.0:
                alpha[i] = W / den
                M[g] = (R1 + gl[i] * M[g]) / den
            g += 1
            W = 0.0
    return alpha, M


@njit(cache=True, nogil=True)
def score_residuals(X, D, w, flags, omega, gl, bounds, alpha, M):
    """eta_i of the module docstring, (n, s) in sorted order.

    Forward scan: the R2 part, prefix sums over the groups before row i (t_g > y_i) of
    alpha Gt and alpha Gt m.  Backward scan: the R1 part, suffix sums of alpha and alpha m over
    the groups at or after row i, and the event term w_i (x_i - m_g(i)).
    """
    n, s = X.shape
    eta = np.zeros((n, s))
    BV = np.zeros(s)
    AV = np.zeros(s)
    b = 0.0
    g = 0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            b = 0.0
            BV[:] = 0.0
        c = D[i] * omega[i]
        if c != 0.0:
            eta[i] -= c * (b * X[i] - BV)
        if f & GROUP_END:
            a = alpha[i] * gl[i]
            if a != 0.0:
                b += a
                BV += a * M[g]
            g += 1
    g = M.shape[0]
    cur = -1
    for st in range(bounds.size - 2, -1, -1):
        A = 0.0
        AV[:] = 0.0
        for i in range(bounds[st + 1] - 1, bounds[st] - 1, -1):
            f = flags[i]
            if f & GROUP_END:
                g -= 1
                cur = g
                if alpha[i] != 0.0:
                    A += alpha[i]
                    AV += alpha[i] * M[g]
            if f & EVENT:
                eta[i] += w[i] * (X[i] - M[cur])
            eta[i] -= D[i] * (A * X[i] - AV)
    return eta


@njit(cache=True, nogil=True)
def censoring_residuals(X, D, w, flags, omega, gl, stop, stratum, cgroup, censored, alpha, M,
                        n_strata, n_cgroups, by_stratum, order, events_first=False):
    """psi_i of the module docstring, (n, s) in sorted order.

    One sweep over the rows in ascending time across strata (``order``), a block of equal times
    at a time: first q_c(u) from the running per-stratum state

        F_s = sum_{t_g >= u} alpha_g Gt_g,   H_s = sum_{t_g >= u} alpha_g Gt_g m_g,
        C0_s = sum_{y_j < u} D_j omega_j,    C1_s = sum_{y_j < u} D_j omega_j x_j,
        q_s(u) = C1_s F_s - C0_s H_s,

    (q_c = q_s when each stratum has its own G, ``by_stratum``, else the sum over strata, kept
    as a running total), then psi for the block's rows, then the block leaves F, H (its event
    groups) and joins C0, C1 (its competing rows) and leaves the risk set Y_c.  With
    ``events_first`` (R finegray()'s tie rule, engine.censoring) the block's uncensored rows do
    all of this before its censored rows: an event at u precedes a censoring at u.
    """
    n, s = X.shape
    F = np.zeros(n_strata)
    H = np.zeros((n_strata, s))
    left = np.zeros(n_strata, np.int64)    # event groups still ahead, to end F, H at exactly 0
    C0 = np.zeros(n_strata)
    C1 = np.zeros((n_strata, s))
    Q = np.zeros((n_strata, s))
    Qall = np.zeros(s)
    Y = np.zeros(n_cgroups)
    dC = np.zeros(n_cgroups)
    L = np.zeros((n_cgroups, s))
    qy = np.zeros((n_cgroups, s))
    stamp = np.full(n_cgroups, -1, np.int64)
    gid = np.full(n, -1, np.int64)
    g = 0
    for i in range(n):
        Y[cgroup[i]] += w[i]
        if flags[i] & GROUP_END:
            if alpha[i] != 0.0:
                a = alpha[i] * gl[i]
                F[stratum[i]] += a
                H[stratum[i]] += a * M[g]
                left[stratum[i]] += 1
                gid[i] = g
            g += 1
    psi = np.zeros((n, s))
    a0 = 0
    block = 0
    while a0 < n:
        u = stop[order[a0]]
        b0 = a0
        while b0 < n and stop[order[b0]] == u:
            b0 += 1
        # crr: the block at once; finegray: its events and competing rows leave first
        for phase in range(2 if events_first else 1):
            for k in range(a0, b0):
                i = order[k]
                if _in_phase(censored[i], phase, events_first) and censored[i]:
                    dC[cgroup[i]] += w[i]
            for k in range(a0, b0):
                i = order[k]
                c = cgroup[i]
                if (_in_phase(censored[i], phase, events_first) and censored[i]
                        and stamp[c] != block):
                    stamp[c] = block
                    if Y[c] > 0.0:
                        q = Q[c] if by_stratum else Qall
                        qy[c] = q / Y[c]
                        L[c] += q * (dC[c] / (Y[c] * Y[c]))
                    dC[c] = 0.0
            for k in range(a0, b0):
                i = order[k]
                if not _in_phase(censored[i], phase, events_first):
                    continue
                c = cgroup[i]
                if censored[i]:
                    psi[i] = w[i] * (qy[c] - L[c])
                else:
                    psi[i] = -w[i] * L[c]
            for k in range(a0, b0):
                i = order[k]
                if _in_phase(censored[i], phase, events_first):
                    Y[cgroup[i]] -= w[i]
                if phase == 1:
                    continue                  # the block's groups left in phase 0
                st = stratum[i]
                moved = False
                if gid[i] >= 0:       # the group's end row may be censored: it leaves now
                    left[st] -= 1
                    if left[st] == 0:
                        F[st] = 0.0
                        H[st] = 0.0
                    else:
                        a = alpha[i] * gl[i]
                        F[st] -= a
                        H[st] -= a * M[gid[i]]
                    moved = True
                c = D[i] * omega[i]
                if c != 0.0:
                    C0[st] += c
                    C1[st] += c * X[i]
                    moved = True
                if moved:
                    new = C1[st] * F[st] - C0[st] * H[st]
                    Qall += new - Q[st]
                    Q[st] = new
        a0 = b0
        block += 1
    return psi


@njit(cache=True, inline="always")
def _in_phase(censored, phase, events_first):
    """Whether a row takes part in this phase of its block: every row when the block is done
    at once; its uncensored rows in phase 0 and its censored rows in phase 1 otherwise."""
    return (not events_first) or (censored == (phase == 1))
