"""X' diag(h) X of chosen sparse columns, straight from their CSC arrays.

The Gram matrix of a dense working set (rows holding tens of its columns): the Newton
information, the proximal-Newton model when its columns are too full for column-wise coordinate
descent.  The rows are read a chunk at a time (a small CSR of the
chunk, built from per-column cursors), so no row-major copy of the whole block is kept, and each
row adds its nnz_row (nnz_row + 1) / 2 products to the upper triangle: O(sum of nnz_row^2 / 2)
in all, about 20 times fewer flops than a dense product at 5% density.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Rows per chunk: the chunk's CSR (about 12 bytes per non-zero) stays in cache.
CHUNK = 1024


@njit(cache=True, nogil=True)
def weighted_gram(indptr, indices, values, vptr, coords, h, chunk):
    """Q = sum_i h_i x_i x_i' over the columns ``coords`` (s x s, symmetric).

    Columns as in modeldata.ModelData: ``vptr[j]`` the offset of column j's values in
    ``values``, or -1 for a binary column; row indices ascending within a column.
    """
    s = coords.size
    n = h.size
    Q = np.zeros((s, s))
    pos = indptr[coords].astype(np.int64)
    rp = np.zeros(chunk + 1, np.int64)
    rc = np.empty(1024, np.int64)
    rv = np.empty(1024)
    for r0 in range(0, n, chunk):
        rc, rv = chunk_rows(indptr, indices, values, vptr, coords, pos, r0, min(n, r0 + chunk),
                            rp, rc, rv)
        for i in range(min(n, r0 + chunk) - r0):
            hi = h[r0 + i]
            if hi == 0.0:
                continue
            for a in range(rp[i], rp[i + 1]):
                ca = rc[a]
                hx = hi * rv[a]
                for b in range(a, rp[i + 1]):
                    Q[ca, rc[b]] += hx * rv[b]
    for a in range(s):
        for b in range(a):
            Q[a, b] = Q[b, a]
    return Q


@njit(cache=True, nogil=True)
def cross_gram(indptr, indices, values, vptr, coords, left, h, chunk):
    """R = sum_i h_i x_i[coords[left]] x_i[coords]' (left.size x s): the rows of Q for a few of
    the columns, at O(nnz + nnz of those columns x nnz_row)."""
    s = coords.size
    n = h.size
    R = np.zeros((left.size, s))
    at = np.full(s, -1, np.int64)
    for a in range(left.size):
        at[left[a]] = a
    pos = indptr[coords].astype(np.int64)
    rp = np.zeros(chunk + 1, np.int64)
    rc = np.empty(1024, np.int64)
    rv = np.empty(1024)
    for r0 in range(0, n, chunk):
        rc, rv = chunk_rows(indptr, indices, values, vptr, coords, pos, r0, min(n, r0 + chunk),
                            rp, rc, rv)
        for i in range(min(n, r0 + chunk) - r0):
            hi = h[r0 + i]
            if hi == 0.0:
                continue
            for a in range(rp[i], rp[i + 1]):
                la = at[rc[a]]
                if la < 0:
                    continue
                hx = hi * rv[a]
                for b in range(rp[i], rp[i + 1]):
                    R[la, rc[b]] += hx * rv[b]
    return R


@njit(cache=True, nogil=True)
def chunk_rows(indptr, indices, values, vptr, coords, pos, r0, r1, rp, rc, rv):
    """Rows r0 <= i < r1 of the columns ``coords`` as CSR: rp (filled in place), (rc, rv)
    returned (grown when too small); rc the position in ``coords``, ascending within a row.
    ``pos[c]`` is column coords[c]'s first non-zero at or after row r0, and is moved on."""
    s = coords.size
    rp[:] = 0
    for c in range(s):
        j = coords[c]
        k = pos[c]
        end = indptr[j + 1]
        while k < end and indices[k] < r1:
            rp[indices[k] - r0 + 1] += 1
            k += 1
    for i in range(r1 - r0):
        rp[i + 1] += rp[i]
    total = rp[r1 - r0]
    if total > rc.size:
        rc = np.empty(2 * total, np.int64)
        rv = np.empty(2 * total)
    fill = rp[:r1 - r0].copy()
    for c in range(s):
        j = coords[c]
        k = pos[c]
        end = indptr[j + 1]
        v0 = vptr[j]
        while k < end and indices[k] < r1:
            t = fill[indices[k] - r0]
            rc[t] = c
            rv[t] = 1.0 if v0 < 0 else values[v0 + k - indptr[j]]
            fill[indices[k] - r0] = t + 1
            k += 1
        pos[c] = k
    return rc, rv


def centred_gram(indptr, indices, values, vptr, coords, h):
    """Q of the columns centred at their h-weighted means, x - mu:
    X' diag(h) X - (X'h)(X'h)' / sum(h) (the likelihood does not change when x shifts)."""
    coords = np.asarray(coords, np.int64)
    h = np.ascontiguousarray(h, dtype=np.float64)
    Q = weighted_gram(indptr, indices, values, vptr, coords, h, CHUNK)
    total = h.sum()
    if total > 0:
        xh = column_sums(indptr, indices, values, vptr, coords, h)
        Q -= np.outer(xh, xh) / total
    return Q


def extended_centred_gram(indptr, indices, values, vptr, coords, h, old, Q_old):
    """centred_gram over ``coords`` when ``Q_old`` holds it over the columns ``old`` at the same
    h: only the rows of the columns not in ``old`` are formed (cross_gram), the rest copied."""
    coords = np.asarray(coords, np.int64)
    order = np.argsort(old)
    at = np.minimum(np.searchsorted(old[order], coords), old.size - 1)
    known = old[order][at] == coords
    fresh = np.flatnonzero(~known)
    Q = np.empty((coords.size, coords.size))
    kept, was = np.flatnonzero(known), order[at[known]]
    Q[np.ix_(kept, kept)] = Q_old[np.ix_(was, was)]
    if fresh.size:
        R = cross_gram(indptr, indices, values, vptr, coords, fresh, h, CHUNK)
        total = h.sum()
        if total > 0:
            xh = column_sums(indptr, indices, values, vptr, coords, h)
            R -= np.outer(xh[fresh], xh) / total
        Q[fresh, :] = R
        Q[:, fresh] = R.T
    return Q


@njit(cache=True, nogil=True)
def column_sums(indptr, indices, values, vptr, coords, h):
    """X'h over the columns ``coords``."""
    out = np.zeros(coords.size)
    for c in range(coords.size):
        j = coords[c]
        v0 = vptr[j]
        acc = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            acc += (1.0 if v0 < 0 else values[v0 + k - indptr[j]]) * h[indices[k]]
        out[c] = acc
    return out
