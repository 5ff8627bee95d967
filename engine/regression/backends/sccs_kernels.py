"""Numba kernels of the conditional Poisson (SCCS) likelihood, Suchard2013 eqs 2 and 6-9.

Eras are sorted by case (case i owns eras case_ptr[i] .. case_ptr[i+1]-1) and the exposures
are CSC columns over the sorted eras, so the entries of a column fall case by case.  Per case
the backend keeps a shift c_i (the largest eta in the case when last re-centred), the era terms
E_k = l_k exp(eta_k - c_i) and the denominator D_i = sum_k E_k (Suchard2013's M[L exp(X beta)]).
With case weights w_i and event counts n_i = sum_k y_k:

    l(beta) = sum_i w_i [ sum_k y_k (log l_k + eta_k - c_i) - n_i log D_i ]          (eq. 2)

which is the log of the multinomial probability of where each case's events fell (statsmodels'
ConditionalPoisson with offset log l); eq. 2 of Suchard2013 drops the constant sum y log l.
A coordinate touches only the cases of its column: every kernel here is O(nnz_j).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .diagonal_step_kernels import soft_threshold


@njit(cache=True, nogil=True)
def recentre(case_ptr, eta, length, E, D, shift):
    """c_i = max eta in case i, E_k = l_k exp(eta_k - c_i), D_i = sum_k E_k: O(K)."""
    for i in range(case_ptr.size - 1):
        top = -np.inf
        for k in range(case_ptr[i], case_ptr[i + 1]):
            top = max(top, eta[k])
        shift[i] = top
        total = 0.0
        for k in range(case_ptr[i], case_ptr[i + 1]):
            E[k] = length[k] * math.exp(eta[k] - top)
            total += E[k]
        D[i] = total


@njit(cache=True, nogil=True)
def loglik(case_ptr, eta, y, log_length, E, D, shift, w, n):
    """l(beta) (eq. 2 plus sum y log l); also re-sums D_i from E, undoing the rounding that
    incremental updates accumulate (Suchard2013's once-per-cycle O(K) work)."""
    ll = 0.0
    for i in range(case_ptr.size - 1):
        total = 0.0
        part = 0.0
        for k in range(case_ptr[i], case_ptr[i + 1]):
            total += E[k]
            if y[k] > 0.0:
                part += y[k] * (log_length[k] + eta[k] - shift[i])
        D[i] = total
        if w[i] > 0.0 and n[i] > 0.0:
            ll += w[i] * (part - n[i] * math.log(total))
    return ll


@njit(cache=True, nogil=True)
def grad_hess(indptr, indices, values, j, case_of, y, E, D, w, n):
    """dl/dbeta_j (eq. 7) and -d2l/dbeta_j^2 (eq. 9) by one fused pass over column j.

    Per case touched: W1 = sum_k E_k x_kj / D_i and W2 = sum_k E_k x_kj^2 / D_i (eq. 8; W2 = W1
    for 0/1 exposures), then g += w_i (sum_k y_k x_kj - n_i W1), h += w_i n_i (W2 - W1^2).
    """
    g = 0.0
    h = 0.0
    t = indptr[j]
    stop = indptr[j + 1]
    while t < stop:
        i = case_of[indices[t]]
        y1 = 0.0
        n1 = 0.0
        n2 = 0.0
        while t < stop and case_of[indices[t]] == i:
            k = indices[t]
            x = values[t]
            y1 += y[k] * x
            n1 += E[k] * x
            n2 += E[k] * x * x
            t += 1
        if w[i] > 0.0 and n[i] > 0.0:
            W1 = n1 / D[i]
            g += w[i] * (y1 - n[i] * W1)
            h += w[i] * n[i] * (n2 / D[i] - W1 * W1)
    return g, h


@njit(cache=True, nogil=True)
def update(indptr, indices, values, j, delta, case_of, eta, length, E, D, shift):
    """beta_j += delta: eta, E and the denominators D_i of the cases of column j only (the
    Suchard2013's sparse update, Listing 3).  Returns the largest eta_k - c_i touched, so the caller
    can re-centre before exp overflows."""
    top = -np.inf
    for t in range(indptr[j], indptr[j + 1]):
        k = indices[t]
        i = case_of[k]
        eta[k] += delta * values[t]
        new = length[k] * math.exp(eta[k] - shift[i])
        D[i] += new - E[k]
        E[k] = new
        top = max(top, eta[k] - shift[i])
    return top


@njit(cache=True, nogil=True)
def residuals(case_ptr, y, E, D, w, n, r, q):
    """r_k = dl/deta_k = w_i (y_k - n_i p_k) and q_k = p_k = E_k / D_i, in place."""
    for i in range(case_ptr.size - 1):
        for k in range(case_ptr[i], case_ptr[i + 1]):
            q[k] = E[k] / D[i]
            r[k] = w[i] * (y[k] - n[i] * q[k]) if n[i] > 0.0 else 0.0


@njit(cache=True, nogil=True)
def quadratic_cd(indptr, indices, values, coords, case_of, n_cases, r, q, a, beta, lam1, lam2,
                 tol, max_cycles):
    """Coordinate descent on the exact quadratic model of -l around beta plus the penalty.

    The Hessian of -l in eta is block diagonal, a_i (diag(p_i) - p_i p_i') per case
    (a_i = w_i n_i), so with u = X delta and s_i = sum_k p_k u_k kept up to date,
    (H delta)_j = sum over the entries of column j of a_i p_k x_kj (u_k - s_i) and
    H_jj = sum_i a_i (sum_k p_k x_kj^2 - (sum_k p_k x_kj)^2): O(nnz_j) per coordinate, and
    the step minimises the true second-order model (proximal Newton, not a diagonal stand-in).
    Returns (delta, g), g = dl/dbeta on ``coords``.
    """
    p = beta.size
    u = np.zeros(r.size)
    s = np.zeros(n_cases)
    delta = np.zeros(p)
    g = np.zeros(p)
    H = np.zeros(p)
    for c in range(coords.size):
        j = coords[c]
        gj = 0.0
        hj = 0.0
        t = indptr[j]
        stop = indptr[j + 1]
        while t < stop:
            i = case_of[indices[t]]
            m = 0.0
            while t < stop and case_of[indices[t]] == i:
                k = indices[t]
                x = values[t]
                gj += x * r[k]
                hj += a[i] * q[k] * x * x
                m += q[k] * x
                t += 1
            hj -= a[i] * m * m
        g[j] = gj
        H[j] = hj
    full = True
    for _ in range(max_cycles):
        biggest = 0.0
        for c in range(coords.size):
            j = coords[c]
            if H[j] + lam2[j] <= 0.0:
                continue
            b = beta[j] + delta[j]
            if not full and b == 0.0 and lam1[j] > 0.0:
                continue
            hd = 0.0
            for t in range(indptr[j], indptr[j + 1]):
                k = indices[t]
                i = case_of[k]
                hd += a[i] * q[k] * values[t] * (u[k] - s[i])
            G = hd - g[j]
            z = H[j] * b - G
            new = soft_threshold(z, lam1[j], H[j] + lam2[j])
            move = new - b
            if move != 0.0:
                delta[j] += move
                for t in range(indptr[j], indptr[j + 1]):
                    k = indices[t]
                    u[k] += move * values[t]
                    s[case_of[k]] += move * q[k] * values[t]
                step = abs(move) * math.sqrt(H[j] + lam2[j])
                if step > biggest:
                    biggest = step
        if biggest < tol:
            if full:
                break
            full = True
        else:
            full = False
    return delta, g


@njit(cache=True, nogil=True)
def information_matrix(rp, rc, rv, s, case_ptr, a, q, r):
    """Gradient X_S' r and observed information over the s columns of a row block (CSR over
    the sorted eras, columns renumbered 0..s-1):
    I = sum_i a_i (sum_k p_k x_k x_k' - m_i m_i'), m_i = sum_k p_k x_k, a_i = w_i n_i (eq. 9
    in matrix form).  Cost: the pairs of non-zeros within eras and within cases."""
    info = np.zeros((s, s))
    g = np.zeros(s)
    m = np.zeros(s)
    touched = np.empty(s, np.int64)
    seen = np.zeros(s, np.bool_)
    for i in range(case_ptr.size - 1):
        count = 0
        for k in range(case_ptr[i], case_ptr[i + 1]):
            wk = a[i] * q[k]
            for t in range(rp[k], rp[k + 1]):
                j = rc[t]
                x = rv[t]
                g[j] += x * r[k]
                if a[i] == 0.0:
                    continue
                if not seen[j]:
                    seen[j] = True
                    touched[count] = j
                    count += 1
                m[j] += q[k] * x
                for u in range(rp[k], rp[k + 1]):
                    info[j, rc[u]] += wk * x * rv[u]
        for b in range(count):
            j = touched[b]
            for c in range(count):
                info[j, touched[c]] -= a[i] * m[j] * m[touched[c]]
        for b in range(count):
            m[touched[b]] = 0.0
            seen[touched[b]] = False
    return g, info
