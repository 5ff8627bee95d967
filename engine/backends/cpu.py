"""The CPU backend: NumPy arrays and the Numba kernels of cpu_kernels.py.

A backend holds one fit's state (linear predictor eta and D = w exp(eta - shift) over the sorted
rows) and answers the few questions the likelihoods ask.  The GPU backend implements the same
methods with device arrays.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import cpu_kernels as k
from .diagonal_step import DiagonalStep
from ..modeldata import EVENT, ModelData

# Re-centre exp(eta - shift) when eta has grown this far above the shift (exp(50) is far from
# overflow, and the re-centring is rare).
_RESHIFT = 50.0


class CpuBackend:
    """Risk-set scans on the CPU for one ModelData."""

    name = "cpu"

    def __init__(self, md: ModelData, efron: bool):
        self.md = md
        self.efron = bool(efron)
        self.has_start = md.start is not None
        self._start = md.start if self.has_start else np.zeros(0)
        self._start_order = md.start_order if self.has_start else np.zeros(0, np.int64)
        self._event = (md.flags & EVENT).astype(bool)
        self._wev = np.where(self._event, md.weights, 0.0)
        self._scratch = np.zeros(md.n)
        self._inner = DiagonalStep(md.indptr, md.indices, md.values, md.vptr, md.n)
        self._flags = md.flags.copy()     # as built, before any weights cleared an event
        self.set_beta(np.zeros(md.p))

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        """Recompute eta = X beta and D from scratch."""
        md = self.md
        self.eta = k.set_linear_predictor(md.indptr, md.indices, md.values, md.vptr,
                                          np.asarray(beta, np.float64), md.n)
        self._recentre()

    def _recentre(self) -> None:
        self.shift = float(self.eta.max()) if self.eta.size else 0.0
        self.D = self.md.weights * np.exp(self.eta - self.shift)

    def set_weights(self, w_sorted: np.ndarray) -> None:
        """New case weights in sorted order; eta is kept.  A zero-weight event loses its EVENT
        flag, so it also leaves Efron's tie count and no risk set is left empty."""
        md = self.md
        md.weights = np.ascontiguousarray(w_sorted, dtype=np.float64)
        md.flags = np.where(md.weights > 0, self._flags, self._flags & ~EVENT).astype(np.uint8)
        self._event = (md.flags & EVENT).astype(bool)
        self._wev = np.where(self._event, md.weights, 0.0)
        self._recentre()

    def update(self, j: int, delta: float) -> None:
        """beta_j += delta: sparse update of eta and D."""
        md = self.md
        top = k.update_coordinate(md.indptr, md.indices, md.values, md.vptr, j, delta,
                                  self.eta, self.D, md.weights, self.shift)
        if top - self.shift > _RESHIFT:
            self._recentre()

    # -- scans ---------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2 at the current beta: one O(N) fused pass."""
        md = self.md
        return k.coordinate_grad_hess(md.indptr, md.indices, md.values, md.vptr, j,
                                      self._scratch, self.D, md.weights, md.flags, self.efron,
                                      self.has_start, md.stop, self._start, self._start_order,
                                      md.strata_bounds)

    def _pass(self, want: int):
        md = self.md
        return k.risk_set_pass(self.eta, self.D, md.weights, md.flags, self.efron, self.shift,
                               self.has_start, md.stop, self._start, self._start_order,
                               md.strata_bounds, want)

    def loglik(self) -> float:
        """Log partial likelihood at the current beta."""
        return self._pass(0)[0]

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        """Log partial likelihood and its full gradient in O(N + nnz)."""
        md = self.md
        ll, r, _ = self._pass(1)
        g = k.column_dots(md.indptr, md.indices, md.values, md.vptr, self._wev - r)
        return ll, g

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """Log-likelihood, the gradient on ``coords`` and the minimiser of the penalised
        quadratic model in which the Hessian in eta is replaced by its diagonal (glmnet's
        approximation), over ``coords`` (see diagonal_step).  ``fresh=False`` lets the Gram
        matrix of the previous step stand in (near the optimum the curvature barely moves; the
        gradient is always exact)."""
        ll, r, h = self._pass(2)
        delta, g = self._inner.solve(coords, self._wev - r, h, beta, lam1, lam2, tol,
                                     max_cycles, fresh)
        return ll, g, delta

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log-likelihood, gradient and observed information (-Hessian) over columns ``cols``.

        I = sum_k r_k x_k x_k^T - sum over event terms of wbar m m^T (see cpu_kernels).
        """
        md = self.md
        cols = np.asarray(cols, np.int64)
        ll, r, _ = self._pass(1)
        Xs = self.sorted_block(cols)
        g = Xs.T @ (self._wev - r)
        Xr = Xs.tocsr()
        chunk = int(max(64, min(4096, 2 ** 22 // max(1, cols.size))))
        info = k.information_matrix(Xr.indptr.astype(np.int64), Xr.indices.astype(np.int64),
                                    Xr.data, cols.size, r, self.D, md.weights, md.flags,
                                    self.efron, self.has_start, md.stop, self._start,
                                    self._start_order, md.strata_bounds, chunk)
        return ll, np.asarray(g).ravel(), info

    def sorted_block(self, cols: np.ndarray) -> sp.csc_matrix:
        """The chosen columns as a CSC matrix over the sorted rows."""
        return sp.csc_matrix(self.md.block(cols), shape=(self.md.n, len(cols)))
