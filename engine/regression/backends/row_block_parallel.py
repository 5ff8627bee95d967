"""The working set's row block on both cores: its build, its Gram matrix and its image X x.

The block holds the sparse columns as CSR arrays (rp, rc, rv) and the dense ones (stored in at
least DENSE_FILL of the rows: a spline basis, age, a continuous exposure) as an n x d row-major
array Z, their positions after the sparse ones: a dense column's CSR entries cost 12 bytes each
and make every entry carry a value.  In the Gram matrix a sparse entry's products with its
row's Z go to a small s x d block (in cache), and Z's own products are BLAS products a few
thousand rows at a time.  Z has no columns for a sparse working set: then the kernels do what
they did before Z.

What the Gram-matrix inner loop of diagonal_step reads (the sparse L1 fit at 10^6 rows spent
1.2 s of its 2.6 s of kernels in the serial row block build, Gram matrix and image).
The rows are cut into pieces fixed by n (never by the thread count), so the serial kernels
(used where Numba has no thread-safe threading layer or no core is idle, see numba_layer) and
the parallel ones give the same numbers, whatever the thread count:
- the build is a counting sort by row within each piece (its fill pointers stay in cache), the
  pieces writing disjoint runs of rp, rc, rv: CSR rows, rc the position among the chosen
  columns (int32: 4 bytes less per entry, 0.36 GB at 10^7 rows), with rv empty when every
  chosen column is binary (OMOP's covariates, the benchmarks' simulated ones): the kernels then
  read 4 bytes an entry instead of 12, and multiply by no value (the same numbers: x * 1.0 is
  x);
- the Gram matrix sums only the upper triangle of each row's outer product (half the work),
  per piece, then the pieces in order (the centred X' diag(h) X to rounding);
- X'v sums per piece, then the pieces in order (X'v to rounding);
- the image writes each row once (Z's part after the CSR part of the row).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import diagonal_step_kernels as serial
from ...core import numba_layer

# rows per piece (pieces are fixed by n, never by the thread count: the same sums either way)
_PIECE_ROWS = 1 << 14
# at most this many bytes of per-piece Gram matrices (at most 16 pieces)
_GRAM_BYTES = 1 << 25
# fewer rows stay on one thread: at 10^5 x 1,000 (L1, 13 steps) the parallel kernels made the
# fit 0.20-0.24 s against 0.18 s serial on 2 cores, at 3 x 10^5 0.50 s against 0.49 s
_PARALLEL_ROWS = 1 << 19
# a column stored in at least this fraction of the rows joins Z: 8 bytes a row, no more than
# its CSR entries would take
DENSE_FILL = 2 / 3
# Z is filled, and its BLAS products taken, this many bytes of rows at a time
_DENSE_CHUNK_BYTES = 1 << 18


def _parallel(rows) -> bool:
    return numba_layer.parallel_ok(rows, least=_PARALLEL_ROWS)


def split_dense(indptr, coords, n):
    """(sparse, dense): the columns ``coords`` stored in fewer / at least DENSE_FILL of the
    n rows, each in the order given."""
    full = (indptr[coords + 1] - indptr[coords]) >= DENSE_FILL * n
    return coords[~full], coords[full]


def split_block(indptr, indices, values, vptr, coords, n, dense_of=None, counted=None):
    """The columns ``coords`` as a row block (order, s, rp, rc, rv, Z): the s sparse ones as
    CSR rows (row_block), the dense ones as Z (dense_block, or ``dense_of(columns)`` where the
    caller keeps it: dense_columns.DenseColumns.block), ``order`` the columns in the block's
    order (sparse, then dense).  ``counted``: row_counts of the sparse ones, when the caller
    has counted them already."""
    sparse, dense = split_dense(indptr, coords, n)
    Z = (dense_block(indptr, indices, values, vptr, dense, n) if dense_of is None
         else dense_of(dense))
    return (np.concatenate([sparse, dense]), sparse.size,
            *row_block(indptr, indices, values, vptr, sparse, n, counted), Z)


def positions(order, cols) -> np.ndarray:
    """Where each of ``cols`` sits in a block's ``order`` (its columns, sparse then dense): the
    indices that put the block's sums back in the order of ``cols``."""
    sorter = np.argsort(order, kind="stable")
    return sorter[np.searchsorted(order, cols, sorter=sorter)]


def row_counts(indptr, indices, coords, n):
    """The first pass of row_block, (at, counts): ``counts[i + 1]`` how many of the columns
    ``coords`` row i holds (what decides whether their row block is worth building), ``at``
    each column's first entry in each piece of rows; row_block takes it as its own."""
    cuts = _cuts(n)
    pieces, s = cuts.size - 1, coords.size
    at = np.empty((pieces + 1, s), np.int64)
    counts = np.zeros(n + 1, np.int64)
    count = _count_parallel if _parallel(n) else _count_serial
    count(indptr, indices, coords, cuts, at, counts)
    return at, counts


def row_block(indptr, indices, values, vptr, coords, n, counted=None):
    """The columns ``coords`` as CSR rows (rp, rc, rv): rc the position in ``coords``
    (ascending within a row), rv the values, empty when every chosen column is binary (all its
    values 1); built piece by piece of rows.  ``counted``: their row_counts (used up)."""
    at, rp = row_counts(indptr, indices, coords, n) if counted is None else counted
    binary = bool(np.all(vptr[coords] < 0))
    fill = _fill_parallel if _parallel(n) else _fill_serial
    return fill(indptr, indices, values, vptr, coords, n, _cuts(n), binary, at, rp)


def dense_block(indptr, indices, values, vptr, coords, n):
    """Z: the columns ``coords`` as an n x len(coords) row-major array (zeros where not
    stored), filled a chunk of rows at a time."""
    rows = max(64, _DENSE_CHUNK_BYTES // (8 * max(coords.size, 1)))
    cuts = np.append(np.arange(0, n, rows), n).astype(np.int64)
    # allocated by NumPy, which asks the kernel for huge pages (10^6 x 20: 45 ms filled where
    # they are granted, 127 ms when Numba allocated it, page by page)
    Z = np.zeros((n, coords.size))
    fill = _dense_block_parallel if _parallel(n) else _dense_block_serial
    fill(indptr, indices, values, vptr, coords, cuts, Z)
    return Z


def gram_matrix(rp, rc, rv, s, h, Z=None, centre=True):
    """Q = X' diag(h) X of the block's columns (the s sparse ones, then Z's), centred at their
    h-weighted means unless ``centre`` is False: the upper triangle of each row's outer
    product only (half the work), summed per row piece and then over the pieces in order."""
    Z = _no_dense(h.size) if Z is None else Z
    m = s + Z.shape[1]
    cuts = _cuts(h.size, max_pieces=max(1, min(16, _GRAM_BYTES // (8 * m * m + 1))))
    pieces = _gram_parallel if _parallel(h.size) else _gram_serial
    Qs, xhs = pieces(rp, rc, rv, s, h, cuts, Z)
    if Z.shape[1]:
        _dense_gram(Qs, xhs, s, h, cuts, Z)
    return _gram_finish(Qs, xhs, h, centre)


def block_dots(rp, rc, rv, s, v, Z=None):
    """X'v over the block's columns (rows read in order, v
    in sequence), summed per row piece, then the pieces in order."""
    Z = _no_dense(v.size) if Z is None else Z
    cuts = _cuts(v.size, max_pieces=16)
    if _parallel(v.size):
        return _block_dots_parallel(rp, rc, rv, s, v, cuts, Z)
    return _block_dots_serial(rp, rc, rv, s, v, cuts, Z)


def block_image(rp, rc, rv, x, Z=None):
    """u = X x over the block's rows, each row written once (in parallel where Numba may); x
    over the sparse columns, then Z's."""
    Z = _no_dense(rp.size - 1) if Z is None else Z
    if not _parallel(rp.size - 1):
        return _block_image_serial(rp, rc, rv, x, Z)
    return _block_image_rows(rp, rc, rv, x, Z)


def _no_dense(n):
    return np.zeros((n, 0))


def _cuts(n, max_pieces=1 << 30):
    """Row boundaries of the pieces: _PIECE_ROWS rows each (fewer, longer ones when capped)."""
    pieces = int(min(max(1, -(-n // _PIECE_ROWS)), max_pieces))
    return np.linspace(0, n, pieces + 1).astype(np.int64)


@njit(cache=True, nogil=True)
def _piece_starts(indptr, indices, coords, cuts, c, at):
    """at[b, c]: the first non-zero of column coords[c] in row piece b (its indices ascend)."""
    j = coords[c]
    lo, hi = indptr[j], indptr[j + 1]
    at[:, c] = lo + np.searchsorted(indices[lo:hi], cuts)


@njit(cache=True, nogil=True)
def _count_piece(indices, at, b, rp):
    for c in range(at.shape[1]):
        for k in range(at[b, c], at[b + 1, c]):
            rp[indices[k] + 1] += 1


@njit(cache=True, nogil=True)
def _fill_piece(indptr, indices, values, vptr, coords, cuts, at, b, rp, rc, rv):
    """Rows cuts[b]..cuts[b+1]-1 of the CSR block: a counting sort by row within the piece,
    whose fill pointers stay in cache; values only where rv has room (not binary)."""
    keep = rv.size > 0
    fill = rp[cuts[b]:cuts[b + 1]].copy()
    base = cuts[b]
    for c in range(coords.size):
        j = coords[c]
        lo, v0 = indptr[j], vptr[j]
        for k in range(at[b, c], at[b + 1, c]):
            r = indices[k] - base
            t = fill[r]
            rc[t] = c
            if keep:
                rv[t] = values[v0 + k - lo] if v0 >= 0 else 1.0
            fill[r] = t + 1


@njit(cache=True, nogil=True)
def _count_serial(indptr, indices, coords, cuts, at, counts):
    for c in range(coords.size):
        _piece_starts(indptr, indices, coords, cuts, c, at)
    for b in range(cuts.size - 1):
        _count_piece(indices, at, b, counts)


@njit(cache=True, parallel=True, nogil=True)
def _count_parallel(indptr, indices, coords, cuts, at, counts):
    """_count_serial with the columns' piece starts and the pieces' counts in parallel
    (disjoint runs of counts)."""
    for c in prange(coords.size):
        _piece_starts(indptr, indices, coords, cuts, c, at)
    for b in prange(cuts.size - 1):
        _count_piece(indices, at, b, counts)


@njit(cache=True, nogil=True)
def _fill_serial(indptr, indices, values, vptr, coords, n, cuts, binary, at, rp):
    """rp (the counts of row_counts) summed into row pointers, then rc and rv filled."""
    for i in range(n):
        rp[i + 1] += rp[i]
    rc = np.empty(rp[n], np.int32)      # s <= GRAM_MAX columns
    rv = np.empty(0 if binary else rp[n])
    for b in range(cuts.size - 1):
        _fill_piece(indptr, indices, values, vptr, coords, cuts, at, b, rp, rc, rv)
    return rp, rc, rv


@njit(cache=True, parallel=True, nogil=True)
def _fill_parallel(indptr, indices, values, vptr, coords, n, cuts, binary, at, rp):
    """_fill_serial with the pieces filled in parallel (disjoint runs of rc, rv)."""
    for i in range(n):
        rp[i + 1] += rp[i]
    rc = np.empty(rp[n], np.int32)      # s <= GRAM_MAX columns
    rv = np.empty(0 if binary else rp[n])
    for b in prange(cuts.size - 1):
        _fill_piece(indptr, indices, values, vptr, coords, cuts, at, b, rp, rc, rv)
    return rp, rc, rv


@njit(cache=True, nogil=True)
def _fill_dense_chunk(indptr, indices, values, vptr, coords, at, b, Z):
    """Rows of chunk b of Z, every column writing its entries there (at[b, e]: column
    coords[e]'s first entry in the chunk): the chunks are disjoint runs of Z's rows, so
    threads fill them side by side."""
    for e in range(coords.size):
        j = coords[e]
        shift = vptr[j] - indptr[j]         # values[k + shift]: entry k's value
        if vptr[j] < 0:
            for k in range(at[b, e], at[b + 1, e]):
                Z[indices[k], e] = 1.0
        else:
            for k in range(at[b, e], at[b + 1, e]):
                Z[indices[k], e] = values[k + shift]


@njit(cache=True, nogil=True)
def _dense_block_serial(indptr, indices, values, vptr, coords, cuts, Z):
    at = np.empty((cuts.size, coords.size), np.int64)
    for e in range(coords.size):
        _piece_starts(indptr, indices, coords, cuts, e, at)
    for b in range(cuts.size - 1):
        _fill_dense_chunk(indptr, indices, values, vptr, coords, at, b, Z)


@njit(cache=True, parallel=True, nogil=True)
def _dense_block_parallel(indptr, indices, values, vptr, coords, cuts, Z):
    at = np.empty((cuts.size, coords.size), np.int64)
    for e in prange(coords.size):
        _piece_starts(indptr, indices, coords, cuts, e, at)
    for b in prange(cuts.size - 1):
        _fill_dense_chunk(indptr, indices, values, vptr, coords, at, b, Z)


@njit(inline="always")
def _cross(C, ca, hx, Z, i):
    """C[ca, e] += h x_ca z_e over Z's columns: one entry's products with row i's Z (C is the
    s x d block of Q, small enough to stay in cache)."""
    for e in range(Z.shape[1]):
        C[ca, e] += hx * Z[i, e]


@njit(cache=True, nogil=True)
def _gram_piece(rp, rc, rv, h, lo, hi, Q, xh, s, Z):
    """Rows lo..hi-1: Q[a, b] += h x_a x_b for b >= a (rc ascends within a row), xh += h x,
    over the s sparse columns, and their products with Z's (after them); Z's own products are
    _dense_gram's.  Binary columns form the row's h z once and add it to the rows of C of the
    row's entries in a loop of their own after its pairs: the numbers of _cross's h * z per
    entry, a multiply per dense column a row instead of per entry (10^6 rows, 181 sparse
    columns beside 4 dense ones, Intel Xeon, one thread, loaded: 97 -> 86-91 ms a build, 74
    without Z).  Valued columns keep _cross (h x z per entry, as h x is rounded)."""
    d = Z.shape[1]
    C = np.zeros((s, d))
    if rv.size == 0:        # binary columns: x = 1 wherever stored
        hz = np.empty(d)
        for i in range(lo, hi):
            hi_ = h[i]
            for a in range(rp[i], rp[i + 1]):
                ca = rc[a]
                xh[ca] += hi_
                for b in range(a, rp[i + 1]):
                    Q[ca, rc[b]] += hi_
            if d == 0:          # no dense columns: no cross products
                continue
            for e in range(d):
                hz[e] = hi_ * Z[i, e]
            for a in range(rp[i], rp[i + 1]):
                ca = rc[a]
                for e in range(d):
                    C[ca, e] += hz[e]
    else:
        for i in range(lo, hi):
            hi_ = h[i]
            for a in range(rp[i], rp[i + 1]):
                ca = rc[a]
                hx = hi_ * rv[a]
                xh[ca] += hx
                for b in range(a, rp[i + 1]):
                    Q[ca, rc[b]] += hx * rv[b]
                _cross(C, ca, hx, Z, i)
    Q[:s, s:] += C


@njit(cache=True, nogil=True)
def _gram_finish(Qs, xhs, h, centre):
    """Sum the pieces in order, centre at the h-weighted means (``centre``), mirror the upper
    triangle."""
    s = Qs.shape[1]
    Q = Qs[0].copy()
    xh = xhs[0].copy()
    for p in range(1, Qs.shape[0]):
        Q += Qs[p]
        xh += xhs[p]
    sum_h = 0.0
    for i in range(h.size):
        sum_h += h[i]
    for a in range(s):
        for b in range(a, s):
            if centre and sum_h > 0:
                Q[a, b] -= xh[a] * xh[b] / sum_h     # centring: Q of x - mu
            Q[b, a] = Q[a, b]
    return Q


@njit(cache=True, nogil=True)
def _gram_serial(rp, rc, rv, s, h, cuts, Z):
    pieces, m = cuts.size - 1, s + Z.shape[1]
    Qs = np.zeros((pieces, m, m))
    xhs = np.zeros((pieces, m))
    for p in range(pieces):
        _gram_piece(rp, rc, rv, h, cuts[p], cuts[p + 1], Qs[p], xhs[p], s, Z)
    return Qs, xhs


@njit(cache=True, parallel=True, nogil=True)
def _gram_parallel(rp, rc, rv, s, h, cuts, Z):
    pieces, m = cuts.size - 1, s + Z.shape[1]
    Qs = np.zeros((pieces, m, m))
    xhs = np.zeros((pieces, m))
    for p in prange(pieces):
        _gram_piece(rp, rc, rv, h, cuts[p], cuts[p + 1], Qs[p], xhs[p], s, Z)
    return Qs, xhs


def _dense_gram(Qs, xhs, s, h, cuts, Z):
    """Z's own part of each piece, Z' diag(h) Z and Z'h over its rows, by BLAS a few
    thousand rows at a time (h Z of those rows stays in cache; the loop over each row's
    d (d + 1) / 2 pairs ran at a pair a nanosecond)."""
    step = max(64, _DENSE_CHUNK_BYTES // (8 * Z.shape[1]))
    for p in range(cuts.size - 1):
        for lo in range(cuts[p], cuts[p + 1], step):
            rows = slice(lo, min(lo + step, cuts[p + 1]))
            hz = Z[rows] * h[rows, None]
            Qs[p, s:, s:] += hz.T @ Z[rows]
            xhs[p, s:] += h[rows] @ Z[rows]


@njit(cache=True, nogil=True)
def _block_dots_serial(rp, rc, rv, s, v, cuts, Z):
    parts = np.zeros((cuts.size - 1, s + Z.shape[1]))
    for p in range(cuts.size - 1):
        _dots_piece(rp, rc, rv, v, cuts[p], cuts[p + 1], parts[p], s, Z)
    return _sum_rows(parts)


@njit(cache=True, parallel=True, nogil=True)
def _block_dots_parallel(rp, rc, rv, s, v, cuts, Z):
    parts = np.zeros((cuts.size - 1, s + Z.shape[1]))
    for p in prange(cuts.size - 1):
        _dots_piece(rp, rc, rv, v, cuts[p], cuts[p + 1], parts[p], s, Z)
    return _sum_rows(parts)


@njit(cache=True, nogil=True)
def _dots_piece(rp, rc, rv, v, lo, hi, g, s, Z):
    """g += X'v over rows lo..hi-1; Z's part summed apart (the same sums: g's entries of Z
    start at zero) and added at the end, out of the way of the CSR part's scattered stores
    into g (10^6 rows x 4 dense columns: 1.5 ms less a call)."""
    binary = rv.size == 0
    gz = np.zeros(Z.shape[1])
    for i in range(lo, hi):
        vi = v[i]
        if binary:
            for a in range(rp[i], rp[i + 1]):
                g[rc[a]] += vi
        else:
            for a in range(rp[i], rp[i + 1]):
                g[rc[a]] += rv[a] * vi
        for e in range(Z.shape[1]):
            gz[e] += Z[i, e] * vi
    for e in range(Z.shape[1]):
        g[s + e] += gz[e]


@njit(cache=True, nogil=True)
def _sum_rows(parts):
    g = parts[0].copy()
    for p in range(1, parts.shape[0]):
        g += parts[p]
    return g


@njit(inline="always")
def _row_image(rp, rc, rv, x, Z, i):
    """Row i of the block times x: its CSR part (diagonal_step_kernels.row_dot), then Z's."""
    acc = serial.row_dot(rp, rc, rv, x, i)
    s = x.size - Z.shape[1]
    for e in range(Z.shape[1]):
        acc += Z[i, e] * x[s + e]
    return acc


@njit(cache=True, nogil=True)
def _block_image_serial(rp, rc, rv, x, Z):
    n = rp.size - 1
    u = np.zeros(n)
    for i in range(n):
        u[i] = _row_image(rp, rc, rv, x, Z, i)
    return u


@njit(cache=True, parallel=True, nogil=True)
def _block_image_rows(rp, rc, rv, x, Z):
    n = rp.size - 1
    u = np.zeros(n)
    for i in prange(n):
        u[i] = _row_image(rp, rc, rv, x, Z, i)
    return u
