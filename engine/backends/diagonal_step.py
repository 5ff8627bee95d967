"""The inner solve of proximal Newton on the CPU, shared by the Cox, Fine-Gray and logistic
backends: minimise the penalised quadratic model with a diagonal Hessian in eta (see
diagonal_step_kernels.quadratic_cd) over a working set of columns.

Through the Gram matrix of the working set when its rows hold few of the chosen columns (sparse
designs: O(s) per coordinate), else column by column at O(nnz_j).  The Gram matrix is kept
while the working set stays, and reused when the caller says the curvature barely moved.
"""
from __future__ import annotations

import numpy as np

from . import diagonal_step_kernels as k
from . import row_block_parallel as rb

# Gram-matrix inner loop: at most this many columns, and rows holding few of them (the pairs of
# non-zeros within rows, the Gram cost, at most this many per non-zero, the column-wise cost).
GRAM_MAX = 2000
GRAM_PAIRS_PER_NNZ = 20.0


class DiagonalStep:
    """One backend's inner solver.

    Parameters
    ----------
    indptr, indices, values, vptr : the backend's CSC arrays (see modeldata.ModelData)
    n : rows
    """

    def __init__(self, indptr, indices, values, vptr, n: int):
        self._arrays = (indptr, indices, values, vptr)
        self._n = int(n)
        self._key = self._block = self._gram = None
        self.u = None      # X delta of the last column-wise solve (None after a Gram solve)

    def solve(self, coords, v, h, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """(delta, g): the step over every coordinate (zero off ``coords``) and g = X'v on
        ``coords``.  ``fresh=False`` lets the previous Gram matrix stand in."""
        coords = np.asarray(coords, np.int64)
        block = self._row_block(coords)
        if block is None:
            delta, g, self.u = k.quadratic_cd_u(*self._arrays, coords, v, h, beta, lam1, lam2,
                                                tol, max_cycles)
            return delta, g
        self.u = None
        rp, rc, rv = block
        if fresh or self._gram is None:
            self._gram = rb.gram_matrix(rp, rc, rv, coords.size, h)
        gs = rb.block_dots(rp, rc, rv, coords.size, v)
        delta = np.zeros(beta.size)
        g = np.zeros(beta.size)
        delta[coords] = k.quadratic_cd_gram(self._gram, gs, beta[coords], lam1[coords],
                                            lam2[coords], tol, max_cycles)
        g[coords] = gs
        return delta, g

    def image(self, delta):
        """X delta of the last solve's step: kept by the column-wise solve, from the row block
        (rows in order) after a Gram solve."""
        if self.u is not None:
            return self.u
        coords = np.frombuffer(self._key, np.int64)
        rp, rc, rv = self._block
        return rb.block_image(rp, rc, rv, np.ascontiguousarray(delta[coords]))

    def _row_block(self, coords):
        """The chosen columns as CSR arrays (rp, rc, rv), kept while the choice stays, or None
        when their Gram matrix would cost more than column-wise updates."""
        key = coords.tobytes()
        if self._key != key:
            block = None
            indptr = self._arrays[0]
            nnz = float(np.sum(indptr[coords + 1] - indptr[coords]))
            # sum of row_nnz^2 >= nnz^2 / n: rows this full rule the Gram matrix out at once
            if 0 < coords.size <= GRAM_MAX and nnz <= GRAM_PAIRS_PER_NNZ * self._n:
                # decide from the row counts alone (one pass over the indices), so that a block
                # too dense for the Gram matrix is never built
                row_nnz = k.row_counts(indptr, self._arrays[1], coords, self._n)
                if float(row_nnz @ row_nnz) <= GRAM_PAIRS_PER_NNZ * max(row_nnz.sum(), 1.0):
                    block = rb.row_block(*self._arrays, coords, self._n)
            self._key, self._block, self._gram = key, block, None
        return self._block
