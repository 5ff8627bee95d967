"""The inner solve of proximal Newton on the CPU, shared by the Cox, Fine-Gray and logistic
backends: minimise the penalised quadratic model with a diagonal Hessian in eta (see
diagonal_step_kernels.quadratic_cd) over a working set of columns.

Through the Gram matrix of the working set when its rows hold few of the chosen columns (sparse
designs: O(s) per coordinate), else column by column at O(nnz_j), except on many rows, where the
column-wise sweeps no longer run in cache and a dense working set's Gram matrix is built from
the columns a chunk of rows at a time (engine.weighted_gram).  The row block's Gram matrix is
kept while the working set stays and reused when the caller says the curvature barely moved;
the dense one is kept for DENSE_REBUILD steps, and extended when the working set grows.
For the Cox likelihood the row block's Gram matrix also takes a secant correction of the
curvature the diagonal leaves out (SR1_MIN).
"""
from __future__ import annotations

import numpy as np

from . import diagonal_step_kernels as k
from . import linear_predictor as lp
from . import row_block_parallel as rb
from .dense_columns import DenseColumns
from ...core import weighted_gram

# Gram-matrix inner loop: at most this many columns, and rows holding few of them (the pairs of
# non-zeros within rows, the Gram cost, at most this many per non-zero, the column-wise cost).
GRAM_MAX = 2000
GRAM_PAIRS_PER_NNZ = 20.0
# A working set too full for the row block is still solved through its Gram matrix on at least
# DENSE_MIN_ROWS rows, when its rows hold at most DENSE_PAIRS_PER_NNZ pairs per non-zero: there
# the column-wise sweeps gather (h_i, u_i) from 16 n bytes, out of cache (about 20 ns a non-zero
# at 10^6 rows, against 3 at 10^5), and one Gram matrix (sum of nnz_row^2 / 2 products, about
# 3 ns each) costs what 4 sweeps do; it is then kept for several steps (DENSE_REBUILD).
DENSE_MIN_ROWS = 500_000
DENSE_PAIRS_PER_NNZ = 100.0
# That Gram matrix is rebuilt (at a step the caller calls fresh) only after serving this many
# steps: the plane step's exact curvature makes up for a stale one (10^5 x 1,000, lam = 1: a
# rebuild at every fresh step took 14 outer steps and 4 builds, one per working set 16 and 2).
DENSE_REBUILD = 6
# The smooth coordinates (no L1 term) of a Gram solve move as one block, solved exactly, when
# there are 2 to BLOCK_MAX of them (its inverse: BLOCK_MAX^3 / 3 flops once a solve).
BLOCK_MAX = 256
# The row block's Gram matrix over-states the Cox curvature by the spread of the risk-set means
# over event times, sum_k wbar_k (m_k - mbar)(m_k - mbar)', nearly of rank one (the risk sets'
# make-up drifts one way as the high-risk leave): at 10^5 x 1,000 the eigenvalues of Q^-1 H over
# the free columns were 0.42-0.78 for one and 0.99-1 for the rest.  A symmetric rank-one (SR1)
# update from the last step s and its change of gradient y = H s removes it, r = Q s - y being
# that direction: taken when r's is at least SR1_MIN of s'Qs (a real curvature gap, not
# rounding) and the result stays positive definite (a Cholesky factor, up to SR1_MAX_COLS
# columns: s^3 / 3 flops, under a step's cost).  Only SR1_SHARE of it is taken: the secant
# pair also carries the likelihood's change of curvature along the step, and a model whose
# curvature falls below the objective's overshoots (at 10^5 x 1,000, L1 0.3 lambda_max: 13
# outer steps taking it whole, 10 taking 0.9, 9 without).  Cox only: a likelihood whose
# Hessian in eta is diagonal (logistic) has no such gap, and Fine-Gray's, weighted by the
# censoring distribution, is not of rank one (10^5 x 1,000, L1 0.1 lambda_max: 19 outer steps
# with the update against 13 without).
SR1_MIN = 1e-3
SR1_MAX_COLS = 1024
SR1_SHARE = 0.9


class DiagonalStep:
    """One backend's inner solver.

    Parameters
    ----------
    indptr, indices, values, vptr : the backend's CSC arrays (see modeldata.ModelData)
    n : rows
    dense_columns : the DenseColumns that keeps the dense columns' Z, shared with the backend's
        information (a new one by default)
    """

    def __init__(self, indptr, indices, values, vptr, n: int, secant: bool = False,
                 dense_columns: DenseColumns | None = None):
        self._arrays = (indptr, indices, values, vptr)
        self._n = int(n)
        self.dense_columns = (DenseColumns(*self._arrays, n) if dense_columns is None
                              else dense_columns)
        self._key = self._block = self._gram = None
        self._dense = False     # the working set's Gram matrix built from its columns
        self._served = 0        # steps it has served since it was built
        self._kept = None       # (that Gram matrix, its columns, the h it was built at)
        self._secant = Secant() if secant else None   # see SR1_MIN
        self.u = None      # X delta of the last column-wise solve (None after a Gram solve)

    def solve(self, coords, v, h, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """(delta, g): the step over every coordinate (zero off ``coords``) and g = X'v on
        ``coords``.  ``fresh=False`` lets the previous Gram matrix stand in."""
        coords = np.asarray(coords, np.int64)
        block = self._row_block(coords)
        if block is None and self._dense:
            self.u = None
            Q = self._dense_gram(coords, h, fresh)
            g = lp.column_dots_on(*self._arrays, v, coords)
            delta = np.zeros(beta.size)
            delta[coords] = gram_solve(Q, g[coords], beta[coords], lam1[coords], lam2[coords],
                                       tol, max_cycles)
            return delta, g
        if block is None:
            delta, g, self.u = k.quadratic_cd_u(*self._arrays, coords, v, h, beta, lam1, lam2,
                                                tol, max_cycles)
            return delta, g
        self.u = None
        order, s, rp, rc, rv, Z = block
        if fresh or self._gram is None:
            self._gram = rb.gram_matrix(rp, rc, rv, s, h, Z)
        gs = rb.block_dots(rp, rc, rv, s, v, Z)
        if self._secant is not None:
            self._gram = self._secant.corrected(self._gram, order, beta, gs)
        delta = np.zeros(beta.size)
        g = np.zeros(beta.size)
        delta[order] = gram_solve(self._gram, gs, beta[order], lam1[order], lam2[order], tol,
                                  max_cycles)
        g[order] = gs
        return delta, g

    def release(self) -> None:
        """Drop what is kept only for the next step (the row block, its Gram matrices, the
        dense columns' Z, the last image): a finished fit then holds its data and no copy of
        it (10^6 rows x 100 dense columns: Z alone 0.8 GB).  The next solve builds them
        again."""
        self._key = self._block = self._gram = self._kept = self.u = None
        self._dense = False
        self._served = 0
        self.dense_columns.release()

    def new_weights(self) -> None:
        """The case weights changed (a fold, a replicate): the dense Gram matrix kept and the
        last secant pair are of the old likelihood."""
        self._kept = None
        if self._secant is not None:
            self._secant.reset()

    def _dense_gram(self, coords, h, fresh):
        """The dense working set's centred Gram matrix: kept, rebuilt at h (see DENSE_REBUILD),
        or, when the working set grew by a few columns, extended by their rows at the h it was
        built with (a KKT check that widens the set costs no new build)."""
        kept = self._kept
        if kept is None or (fresh and self._served >= DENSE_REBUILD):
            kept = (weighted_gram.centred_gram(*self._arrays, coords, h), coords, h)
            self._served = 0
        elif not np.array_equal(kept[1], coords):
            grown = np.setdiff1d(coords, kept[1]).size
            if 2 * grown > coords.size:
                kept = (weighted_gram.centred_gram(*self._arrays, coords, h), coords, h)
                self._served = 0
            else:
                kept = (weighted_gram.extended_centred_gram(*self._arrays, coords, kept[2],
                                                            kept[1], kept[0]), coords, kept[2])
        self._kept = kept
        self._served += 1
        return kept[0]

    def image(self, delta):
        """X delta of the last solve's step: kept by the column-wise solve, from the row block
        (rows in order) after a Gram solve, one X pass after a dense Gram solve."""
        if self.u is not None:
            return self.u
        if self._block is None:
            return lp.set_linear_predictor(*self._arrays, delta, self._n)
        order, _, rp, rc, rv, Z = self._block
        return rb.block_image(rp, rc, rv, np.ascontiguousarray(delta[order]), Z)

    def _row_block(self, coords):
        """The chosen columns as a row block (order, s, rp, rc, rv, Z): the s sparse ones as
        CSR arrays, the dense ones as Z (row_block_parallel), ``order`` the columns in the
        block's order; kept while the choice stays, or None when their Gram matrix would cost
        more than column-wise updates (then ``_dense`` says whether it is built from the
        columns instead: see DENSE_MIN_ROWS)."""
        key = coords.tobytes()
        if self._key != key:
            block = None
            dense = False
            indptr = self._arrays[0]
            nnz = float(np.sum(indptr[coords + 1] - indptr[coords]))
            many = self._n >= DENSE_MIN_ROWS
            # sum of row_nnz^2 >= nnz^2 / n: rows this full rule the Gram matrix out at once
            limit = DENSE_PAIRS_PER_NNZ if many else GRAM_PAIRS_PER_NNZ
            if 0 < coords.size <= GRAM_MAX and nnz <= limit * self._n:
                # decide from the row counts alone (one pass over the indices), so that a block
                # too dense for the Gram matrix is never built; the columns that would join Z
                # count in every row, where Z holds them stored or not (a spline basis's
                # 4 x 10^6 entries at 10^6 rows are not counted again at each working set)
                # (the same pass counts the rows for the block, when it is built)
                sparse, full = rb.split_dense(indptr, coords, self._n)
                counted = rb.row_counts(indptr, self._arrays[1], sparse, self._n)
                row_nnz = counted[1][1:] + float(full.size)
                pairs = float(row_nnz @ row_nnz) / max(row_nnz.sum(), 1.0)
                if pairs <= GRAM_PAIRS_PER_NNZ:
                    block = rb.split_block(*self._arrays, coords, self._n,
                                           self.dense_columns.block, counted)
                else:
                    dense = many and pairs <= DENSE_PAIRS_PER_NNZ
            self._key, self._block, self._gram, self._dense = key, block, None, dense
            if not dense:
                self._kept = None
        return self._block


class Secant:
    """The coefficients and the gradient g = X'v of the last Gram solve, for the secant
    correction of the next one's Gram matrix; forgotten when the weights change (another
    likelihood)."""

    def __init__(self):
        self._last = None

    def reset(self) -> None:
        self._last = None

    def corrected(self, Q, cols, beta, g):
        """Q (over the columns ``cols``, in its order) corrected by the pair s = beta - the
        last solve's, y = the fall of g since then (secant_corrected); Q itself when a column
        is new since then, nothing moved, or Q is too large for the check.  A fresh Q takes
        the last pair too: the curvature it misses barely moves between steps."""
        last = self._last
        self._last = (beta.copy(), np.full(beta.size, np.nan))
        self._last[1][cols] = g
        if last is None or last[0].size != beta.size or cols.size > SR1_MAX_COLS:
            return Q
        s = beta[cols] - last[0][cols]
        y = last[1][cols] - g
        if not np.all(np.isfinite(y)) or not s.any():
            return Q
        return secant_corrected(Q, s, y)


def secant_corrected(Q, s, y):
    """Q less SR1_SHARE of its symmetric rank-one correction towards the secant pair (s, y =
    H s): with r = Q s - y, Q - SR1_SHARE r r' / r's.  Where Q - H = c v v', r is along v and
    the result is Q - SR1_SHARE (Q - H).  Q itself where r's is under SR1_MIN of s'Qs (no gap
    beyond rounding) or the result is not positive definite."""
    Qs = Q @ s
    sQs = float(s @ Qs)
    r = Qs - y
    rs = float(r @ s)
    if not (sQs > 0 and rs > SR1_MIN * sQs):
        return Q
    new = Q - SR1_SHARE * np.outer(r, r) / rs
    try:
        np.linalg.cholesky(new)
    except np.linalg.LinAlgError:
        return Q
    return new


def gram_solve(Q, g, beta, lam1, lam2, tol, max_cycles):
    """The step of diagonal_step_kernels.quadratic_cd_gram over the s columns of the Gram
    matrix Q, its smooth coordinates (lam1 = 0: unpenalised or L2) moving as one block when
    there are 2 to BLOCK_MAX of them and their Q + diag(lam2) is positive definite; else
    (a singular block: nearly aliased columns) one by one."""
    block = np.flatnonzero(lam1 == 0)
    block_inv = np.zeros((0, 0))
    if 2 <= block.size <= BLOCK_MAX:
        A = Q[np.ix_(block, block)] + np.diag(lam2[block])
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            block = block[:0]
        else:
            L_inv = np.linalg.inv(L)
            block_inv = L_inv.T @ L_inv
    else:
        block = block[:0]
    return k.quadratic_cd_gram(Q, g, beta, lam1, lam2, tol, max_cycles, block, block_inv)
