"""The state every proportional-hazards likelihood on the CPU keeps over the sorted rows: the
linear predictor eta = X beta and D = w exp(eta - shift), in step with sparse coordinate updates,
plus the pieces the Cox and Fine-Gray backends share (X^T v, the proximal-Newton inner solve, a
block of sorted columns).  Each backend composes one and adds its own scans.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import cox_kernels
from .diagonal_step import DiagonalStep
from .linear_predictor import column_dots, column_dots_on, set_linear_predictor
from ..modeldata import ModelData
from ..row_flags import EVENT

# Re-centre exp(eta - shift) when eta has grown this far above the shift (exp(50) is far from
# overflow, and the re-centring is rare).
RESHIFT = 50.0


class HazardState:
    """eta, D and the shift for one ModelData; ``wev`` = w * event, the gradient's first term."""

    def __init__(self, md: ModelData, secant: bool = False):
        self.md = md
        self.flags_built = md.flags.copy()     # as built, before any weights cleared an event
        self.inner = DiagonalStep(md.indptr, md.indices, md.values, md.vptr, md.n, secant)
        self._mark_events()
        self.set_beta(np.zeros(md.p))

    def set_beta(self, beta: np.ndarray) -> None:
        """Recompute eta = X beta and D from scratch."""
        md = self.md
        self.eta = set_linear_predictor(md.indptr, md.indices, md.values, md.vptr,
                                        np.asarray(beta, np.float64), md.n)
        self.recentre()

    def recentre(self) -> None:
        self.shift = float(self.eta.max()) if self.eta.size else 0.0
        self.D = self.md.weights * np.exp(self.eta - self.shift)

    def set_weights(self, w_sorted: np.ndarray) -> None:
        """New case weights in sorted order; eta is kept.  A zero-weight event loses its EVENT
        flag, so it also leaves Efron's tie count and no risk set is left empty."""
        md = self.md
        md.weights = np.ascontiguousarray(w_sorted, dtype=np.float64)
        md.flags = np.where(md.weights > 0, self.flags_built,
                            self.flags_built & ~EVENT).astype(np.uint8)
        self._mark_events()
        self.recentre()
        self.inner.new_weights()

    def _mark_events(self) -> None:
        md = self.md
        self.event = (md.flags & EVENT).astype(bool)
        self.wev = np.where(self.event, md.weights, 0.0)

    def update(self, j: int, delta: float) -> None:
        """beta_j += delta: sparse update of eta and D, O(nnz_j)."""
        md = self.md
        top = cox_kernels.update_coordinate(md.indptr, md.indices, md.values, md.vptr, j, delta,
                                            self.eta, self.D, md.weights, self.shift)
        if top - self.shift > RESHIFT:
            self.recentre()

    def gradient(self, r: np.ndarray, cols=None) -> np.ndarray:
        """dl/dbeta over every column (or only ``cols``, 0 elsewhere) from the risk-set terms
        r: X^T (w * event - r)."""
        md = self.md
        if cols is None:
            return column_dots(md.indptr, md.indices, md.values, md.vptr, self.wev - r)
        return column_dots_on(md.indptr, md.indices, md.values, md.vptr, self.wev - r,
                              np.asarray(cols, np.int64))

    def quadratic_step(self, ll, r, h, coords, beta, lam1, lam2, tol, max_cycles, fresh):
        """(ll, g, delta) of the proximal-Newton step from one pass's (ll, r, h)."""
        delta, g = self.inner.solve(coords, self.wev - r, h, beta, lam1, lam2, tol,
                                    max_cycles, fresh)
        return ll, g, delta

    def sorted_block(self, cols: np.ndarray) -> sp.csc_matrix:
        """The chosen columns as a CSC matrix over the sorted rows."""
        return sp.csc_matrix(self.md.block(cols), shape=(self.md.n, len(cols)))
