"""The observed information of the Cox partial likelihood on the CPU (Newton's finish, the
standard errors):

    I = sum_k r_k x_k x_k' - sum over event terms of wbar m m',

m the risk-set mean of the chosen columns at the event term, r the risk-set terms of
cox_kernels.risk_set_pass (Breslow or Efron ties, strata, entry times: see cox_kernels).

The columns are read as a row block (row_block_parallel): the sparse ones as CSR rows, the
dense ones (a spline basis, age) as a row-major array Z.  The first sum is the block's Gram
matrix at weights r (sum of nnz_row^2 / 2 products; Z's part by BLAS).  The second is dense:
the scaled means sqrt(wbar) m are written a chunk of event terms at a time as the rows of a
buffer B, and B'B folded in by one BLAS product per chunk (events x s^2 flops, about 1e11 at
5 x 10^4 events and s = 1,000).  The Numba scan stops at each full buffer and resumes where it
left off, so that the product runs in NumPy's BLAS.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import cox_dense_information as dense_information
from . import row_block_parallel as rb
from ..row_flags import EVENT, GROUP_END, HEAD

# Event terms per BLAS product: an 8 MB buffer at s = 1,000.
CHUNK_BYTES = 8 * 2 ** 20


def information(md, D, r, v, cols, efron, has_start, start, start_order, dense_of=None):
    """(g, I) over the columns ``cols`` of ModelData ``md`` at D = w exp(eta - shift) and its
    r: the gradient X'v (v = dl/deta) and the information, both read from one row block (a
    few dense columns alone: cox_dense_information's fused pass).  ``dense_of(columns)``: the
    dense columns' Z where the caller keeps it (row_block_parallel.split_block)."""
    cols = np.asarray(cols, np.int64)
    s = cols.size
    sparse = rb.split_dense(md.indptr, cols, md.n)[0]
    if sparse.size == 0 and s <= dense_information.FUSED_MAX:
        Z = (rb.dense_block(md.indptr, md.indices, md.values, md.vptr, cols, md.n)
             if dense_of is None else dense_of(cols))
        return dense_information.information(Z, D, np.ascontiguousarray(r),
                                             np.ascontiguousarray(v), md.weights, md.flags,
                                             efron, has_start, md.stop, start, start_order,
                                             md.strata_bounds)
    order, n_sparse, rp, rc, rv, Z = rb.split_block(md.indptr, md.indices, md.values, md.vptr,
                                                     cols, md.n, dense_of)
    r = np.ascontiguousarray(r)
    info = rb.gram_matrix(rp, rc, rv, n_sparse, r, Z, centre=False)
    events, tie = event_rows(md.flags)
    # no more rows than there are event terms: a small fit (a bootstrap replicate of 200 rows)
    # spent a quarter of its time allocating an 8 MB buffer per information
    chunk = max(1, min(events, CHUNK_BYTES // (8 * max(s, 1))))
    buf = np.zeros((chunk + tie, s))
    at = np.array([0, 0, -1, 0])         # the scan's place: row, entry pointer, stratum, ties
    sums = np.zeros(4)                   # R0, S0, E0, W
    R1, S1, E1 = np.zeros(s), np.zeros(s), np.zeros(s)
    touched = np.zeros(s, np.bool_)
    while at[0] < md.n:
        nb = event_means(rp, rc, rv, Z, D, md.weights, md.flags, efron, has_start, md.stop,
                         start, start_order, md.strata_bounds, chunk, buf, at, sums, R1, S1,
                         E1, touched)
        if nb:
            B = buf[:nb]
            info -= B.T @ B
    g = rb.block_dots(rp, rc, rv, n_sparse, np.ascontiguousarray(v), Z)
    # the block's order (sparse, then dense) back to the order of ``cols``
    back = rb.positions(order, cols)
    return g[back], info[np.ix_(back, back)]


@njit(cache=True, nogil=True)
def event_rows(flags):
    """The event rows, and the most in one group of tied times (Efron's terms per group)."""
    events = most = d = 0
    for f in flags:
        if f & EVENT:
            d += 1
            events += 1
        if f & GROUP_END:
            most = max(most, d)
            d = 0
    return events, most


@njit(inline="always")
def _add_row(rp, rc, rv, Z, i, f, V):
    """V += f x_i over the block's columns (CSR part, rv empty: binary; then Z's)."""
    if rv.size == 0:
        for k in range(rp[i], rp[i + 1]):
            V[rc[k]] += f
    else:
        for k in range(rp[i], rp[i + 1]):
            V[rc[k]] += rv[k] * f
    s = V.size - Z.shape[1]
    for e in range(Z.shape[1]):
        V[s + e] += Z[i, e] * f


@njit(cache=True, nogil=True)
def event_means(rp, rc, rv, Z, D, w, flags, efron, has_start, stop, start, start_order, bounds,
                chunk, buf, at, sums, R1, S1, E1, touched):
    """Rows sqrt(wbar) m of the event terms into ``buf``, from row ``at[0]`` on, until at least
    ``chunk`` are written or the rows end; returns how many.  The scan's state (``at``,
    ``sums``, R1, S1, E1: the risk-set sums of cox_kernels) is kept for the next call.  The
    chosen columns as a row block over the sorted rows: CSR (rp, rc, rv) and Z after it."""
    n = D.size
    s = R1.size
    s_sparse = s - Z.shape[1]
    i, q, stratum, d = at[0], at[1], at[2], at[3]
    R0, S0, E0, W = sums[0], sums[1], sums[2], sums[3]
    nb = 0
    while i < n and nb < chunk:
        f = flags[i]
        if f & HEAD:
            R0 = S0 = 0.0
            R1[:] = 0.0
            S1[:] = 0.0
            stratum += 1
            q = bounds[stratum]
        di = D[i]
        R0 += di
        _add_row(rp, rc, rv, Z, i, di, R1)
        if f & EVENT:
            E0 += di
            W += w[i]
            d += 1
            _add_row(rp, rc, rv, Z, i, di, E1)
            for k in range(rp[i], rp[i + 1]):
                touched[rc[k]] = True
            touched[s_sparse:] = True
        if f & GROUP_END:
            if d > 0:
                if has_start:
                    t = stop[i]
                    end = bounds[stratum + 1]
                    while q < end and start[q] >= t:
                        row = start_order[q]
                        S0 += D[row]
                        _add_row(rp, rc, rv, Z, row, D[row], S1)
                        q += 1
                terms = d if (efron and d > 1) else 1
                wt = W / d if (efron and d > 1) else W
                for l in range(terms):
                    c = l / d if terms > 1 else 0.0
                    sc = math.sqrt(wt) / (R0 - S0 - c * E0)
                    for a in range(s):
                        buf[nb, a] = sc * (R1[a] - S1[a] - c * E1[a])
                    nb += 1
                for a in range(s):
                    if touched[a]:
                        E1[a] = 0.0
                        touched[a] = False
            E0 = W = 0.0
            d = 0
        i += 1
    at[0], at[1], at[2], at[3] = i, q, stratum, d
    sums[0], sums[1], sums[2], sums[3] = R0, S0, E0, W
    return nb
