"""Numba kernels of the proximal-Newton inner solve (diagonal_step): coordinate descent on the
penalised quadratic model with a diagonal Hessian in eta, column by column or through the Gram
matrix of a working set.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def soft_threshold(z, lam1, curvature):
    """The minimiser over b of curvature/2 b^2 - z b + lam1 |b|: one coordinate of the penalised
    quadratic model (L2's lam2 already in ``curvature``)."""
    if z > lam1:
        return (z - lam1) / curvature
    if z < -lam1:
        return (z + lam1) / curvature
    return 0.0


@njit(cache=True, nogil=True)
def quadratic_cd(indptr, indices, values, vptr, coords, v, h, beta, lam1, lam2, tol, max_cycles):
    """(delta, g) of quadratic_cd_u, without u."""
    delta, g, _ = quadratic_cd_u(indptr, indices, values, vptr, coords, v, h, beta, lam1, lam2,
                                 tol, max_cycles)
    return delta, g


@njit(cache=True, nogil=True)
def quadratic_cd_u(indptr, indices, values, vptr, coords, v, h, beta, lam1, lam2, tol,
                   max_cycles):
    """Coordinate descent on the penalised quadratic model of -l around beta (glmnet's inner
    loop): -v'X delta + 1/2 sum_k h_k (xc_k' delta)^2 + penalty(beta + delta), v = dl/deta,
    h = -d2l/deta^2 (diagonal), xc = x - mu the columns centred at their h-weighted means.

    The likelihood does not change when x shifts, but its diagonal approximation does: centring
    removes that artefact (it matters for uncentred columns such as age).  The centring stays
    implicit, so sparsity is kept: with u = X delta, c = mu' delta and S = h'u maintained, one
    coordinate costs O(nnz_j).  sum_k v_k = 0, so centring leaves the linear term unchanged.
    h and u sit side by side (hu[i] = (h_i, u_i)): one cache line per row read.
    Returns (delta, g, u), g the gradient of l at beta on ``coords`` (zero elsewhere) and
    u = X delta.
    """
    n = v.size
    p = beta.size
    hu = np.zeros((n, 2))
    for i in range(n):
        hu[i, 0] = h[i]
    delta = np.zeros(p)
    g = np.zeros(p)
    H = np.zeros(p)
    xh = np.zeros(p)
    mu = np.zeros(p)
    sum_h = 0.0
    for i in range(n):
        sum_h += h[i]
    for c in range(coords.size):
        j = coords[c]
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            x = 1.0 if vptr[j] < 0 else values[vptr[j] + k - indptr[j]]
            i = indices[k]
            a0 += x * v[i]
            a1 += h[i] * x
            a2 += h[i] * x * x
        g[j] = a0
        xh[j] = a1
        mu[j] = a1 / sum_h if sum_h > 0 else 0.0
        H[j] = a2 - mu[j] * a1
    shift = 0.0      # mu' delta
    S = 0.0          # h' u
    full = True      # sweep every coordinate, then only the non-zero ones until they settle
    for _ in range(max_cycles):
        biggest = 0.0
        for c in range(coords.size):
            j = coords[c]
            if H[j] + lam2[j] <= 0.0:
                continue
            b = beta[j] + delta[j]
            if not full and b == 0.0 and lam1[j] > 0.0:
                continue
            xhu = 0.0
            for k in range(indptr[j], indptr[j + 1]):
                x = 1.0 if vptr[j] < 0 else values[vptr[j] + k - indptr[j]]
                i = indices[k]
                xhu += x * hu[i, 0] * hu[i, 1]
            G = xhu - shift * xh[j] - mu[j] * S + mu[j] * shift * sum_h - g[j]
            z = H[j] * b - G
            new = soft_threshold(z, lam1[j], H[j] + lam2[j])
            move = new - b
            if move != 0.0:
                delta[j] += move
                for k in range(indptr[j], indptr[j + 1]):
                    x = 1.0 if vptr[j] < 0 else values[vptr[j] + k - indptr[j]]
                    hu[indices[k], 1] += move * x
                S += move * xh[j]
                shift += move * mu[j]
                step = abs(move) * math.sqrt(H[j] + lam2[j])
                if step > biggest:
                    biggest = step
        if biggest < tol:
            if full:
                break          # a full sweep changed nothing: done
            full = True
        else:
            full = False
    return delta, g, hu[:, 1].copy()


@njit(inline="always")
def row_dot(rp, rc, rv, x, i):
    """Row i of the block times x (rv empty: every value 1)."""
    acc = 0.0
    if rv.size == 0:
        for a in range(rp[i], rp[i + 1]):
            acc += x[rc[a]]
    else:
        for a in range(rp[i], rp[i + 1]):
            acc += rv[a] * x[rc[a]]
    return acc


@njit(cache=True, nogil=True)
def quadratic_cd_gram(Q, g, beta, lam1, lam2, tol, max_cycles, block, block_inv):
    """The quadratic_cd model solved through the Gram matrix Q of the chosen columns:
    coordinate descent at O(s) per coordinate instead of O(nnz_j) (glmnet's "covariance
    updates"), worth it when rows hold few of the chosen columns, as in sparse designs.
    ``g`` is the gradient of l on those columns.

    The positions ``block`` (smooth coordinates: no L1 term) move together, each sweep, by the
    exact minimiser over them, ``block_inv`` the inverse of their Q + diag(lam2) (block
    coordinate descent): one by one, correlated unpenalised columns such as a spline basis
    converge at the Gauss-Seidel rate of their block (0.97 a sweep for ns(bmi, df=4)), and the
    sweeps stop long before their minimum.  ``block`` empty: plain coordinate descent."""
    s = g.size
    delta = np.zeros(s)
    r = np.zeros(s)          # Q delta
    alone = np.ones(s, np.bool_)
    alone[block] = False
    m = block.size
    rhs = np.zeros(m)
    full = True
    for _ in range(max_cycles):
        biggest = 0.0
        if m:
            for a in range(m):
                j = block[a]
                rhs[a] = g[j] - r[j] - lam2[j] * (beta[j] + delta[j])
            jump = block_inv @ rhs
            for a in range(m):
                j = block[a]
                delta[j] += jump[a]
                for c in range(s):
                    r[c] += jump[a] * Q[c, j]
            biggest = math.sqrt(max(rhs @ jump, 0.0))     # sqrt(jump' A jump), A = Q_BB + lam2
        for j in range(s):
            H = Q[j, j] + lam2[j]
            if H <= 0.0 or not alone[j]:
                continue
            b = beta[j] + delta[j]
            if not full and b == 0.0 and lam1[j] > 0.0:
                continue
            z = Q[j, j] * b - r[j] + g[j]
            new = soft_threshold(z, lam1[j], H)
            move = new - b
            if move != 0.0:
                delta[j] += move
                for a in range(s):
                    r[a] += move * Q[a, j]
                step = abs(move) * math.sqrt(H)
                if step > biggest:
                    biggest = step
        if biggest < tol:
            if full:
                break
            full = True
        else:
            full = False
    return delta
