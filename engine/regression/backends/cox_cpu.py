"""The Cox partial likelihood on the CPU: the Numba scans of cox_kernels over a HazardState.

A backend holds one fit's state and answers the few questions the likelihood asks (the Backend
protocol of protocol.py).  The GPU backend (cox_gpu.py) answers the same with device arrays.
"""
from __future__ import annotations

import numpy as np

from . import cox_kernels as k
from . import cox_score
from .cox_information import information
from .cox_subspace import PlaneStep, direction_curvature
from .hazard_state import HazardState
from .linear_predictor import set_linear_predictor
from ...core import numba_layer
from ..modeldata import ModelData


class CoxCpuBackend:
    """Risk-set scans on the CPU for one ModelData (Breslow or Efron ties, strata, entry
    times)."""

    name = "cpu"
    # re-choose each proximal-Newton step in the plane of it and the previous step with the
    # exact Hessian (cox_subspace); False gives the plain step (the A/B reference of bench)
    plane_step = True

    def __init__(self, md: ModelData, efron: bool):
        self.md = md
        self.efron = bool(efron)
        self.state = HazardState(md, secant=True)    # diagonal_step.SR1_MIN
        self.has_start = md.start is not None
        # entry times in start order: the kernels' start pointer reads them in sequence
        self._start = md.start[md.start_order] if self.has_start else np.zeros(0)
        self._start_order = md.start_order if self.has_start else np.zeros(0, np.int64)
        self._scratch = np.zeros(md.n)
        self._groups = np.empty((4, md.n))     # risk_set_pass's per-group terms
        self.plane = PlaneStep(lambda x: set_linear_predictor(md.indptr, md.indices, md.values,
                                                              md.vptr, x, md.n))
        self._next = None      # (beta + step, its eta): the line search's first point
        self._at = None        # the beta that eta = X beta was last formed from in O(nnz)
        self._pass = None      # (want, ll, r, h) of the last risk-set pass at the current eta
        self._ahead = False    # eta is the last step's first point (see loglik)

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        """eta = X beta: from the last step's eta change when ``beta`` is the point it led to
        (the line search's first trial), kept when it was formed from this very ``beta`` (a
        solve starting where the last one ended, a score at the fit), else in O(nnz)."""
        ahead, self._next = self._next, None
        self._ahead = False
        if ahead is not None and np.array_equal(beta, ahead[0]):
            self.state.eta = ahead[1]
            self.state.recentre()
            self._at, self._pass, self._ahead = None, None, True
        elif self._at is None or not np.array_equal(beta, self._at):
            self.state.set_beta(beta)
            self._at, self._pass = np.array(beta, dtype=np.float64), None

    def set_weights(self, w_sorted: np.ndarray) -> None:
        self.state.set_weights(w_sorted)
        self.plane.reset()
        self._next = self._pass = None

    def update(self, j: int, delta: float) -> None:
        self._next = self._at = self._pass = None
        self._ahead = False
        self.state.update(j, delta)

    # -- scans ---------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2 at the current beta: one O(N) fused pass."""
        md, s = self.md, self.state
        return k.coordinate_grad_hess(md.indptr, md.indices, md.values, md.vptr, j,
                                      self._scratch, s.D, md.weights, md.flags, self.efron,
                                      self.has_start, md.stop, self._start, self._start_order,
                                      md.strata_bounds)

    def risk_set_pass(self, want: int):
        """(ll, r, h): the log-likelihood and, for want >= 1, the risk-set terms r (and, for
        want = 2, the diagonal curvature h) of every row, in one O(N) pass; the last pass is
        kept until eta or the weights change, so a question asked again at the same point
        costs nothing."""
        if self._pass is not None and self._pass[0] >= want:
            return self._pass[1:]
        md, s = self.md, self.state
        out = k.risk_set_pass(s.eta, s.D, md.weights, md.flags, self.efron, s.shift,
                              self.has_start, md.stop, self._start, self._start_order,
                              md.strata_bounds, want, self._groups)
        self._pass = (want, *out)
        return out

    def loglik(self) -> float:
        """Log partial likelihood at the current beta.  At a step's first point (the line
        search's t = 1, nearly always taken) the pass also forms r and h, which the next step
        and the KKT check then read from it: about a third more for this pass, one pass fewer
        per outer step (10^6 rows: 8-9 ms for the log-likelihood alone, 11-13 ms with r and
        h, each pass)."""
        return self.risk_set_pass(2 if self._ahead else 0)[0]

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        """Log partial likelihood and its full gradient in O(N + nnz)."""
        ll, r, _ = self.risk_set_pass(1)
        return ll, self.state.gradient(r)

    def loglik_gradient_on(self, cols) -> tuple[float, np.ndarray]:
        """Log-likelihood and the gradient on ``cols`` only (0 elsewhere)."""
        ll, r, _ = self.risk_set_pass(1)
        return ll, self.state.gradient(r, cols)

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """Log-likelihood, the gradient on ``coords`` and the minimiser of the penalised
        quadratic model in which the Hessian in eta is replaced by its diagonal (glmnet's
        approximation), over ``coords`` (see diagonal_step).  ``fresh=False`` lets the Gram
        matrix of the previous step stand in (near the optimum the curvature barely moves; the
        gradient is always exact)."""
        ll, r, h = self.risk_set_pass(2)
        ll, g, delta = self.state.quadratic_step(ll, r, h, coords, beta, lam1, lam2, tol,
                                                 max_cycles, fresh)
        if self.plane_step:
            s = self.state
            delta, u = self.plane.step(s.eta, s.wev - r, self.direction_curvature,
                                       coords, beta, delta, s.inner.image(delta), lam1,
                                       lam2)
            self._next = (beta + delta, s.eta + u)
        return ll, g, delta

    def direction_curvature(self, U: np.ndarray) -> np.ndarray:
        """-d2l along the eta-space directions in the rows of U (m x m), one O(N m^2) pass."""
        md, s = self.md, self.state
        return direction_curvature(np.ascontiguousarray(U), s.D, md.weights, md.flags,
                                   self.efron, self.has_start, md.stop, self._start,
                                   self._start_order, md.strata_bounds)

    def release_scratch(self) -> None:
        """See models.base.BackendModel.release_scratch."""
        self.state.inner.release()

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log-likelihood, gradient and observed information (-Hessian) over columns ``cols``.

        I = sum_k r_k x_k x_k^T - sum over event terms of wbar m m^T (see cox_information).
        """
        md, s = self.md, self.state
        ll, r, _ = self.risk_set_pass(1)
        g, info = information(md, s.D, r, s.wev - r, np.asarray(cols, np.int64), self.efron,
                              self.has_start, self._start, self._start_order,
                              s.inner.dense_columns.block)
        return ll, g, info

    def cluster_scores(self, cols, codes: np.ndarray, n_clusters: int) -> np.ndarray:
        """(len(cols), n_clusters): the cluster sums of the weighted score residuals of each
        column in ``cols`` at the current beta (``codes``: cluster of each sorted row), by one
        forward and one backward scan per column (cox_score)."""
        md, s = self.md, self.state
        _, r, _ = self.risk_set_pass(1)
        args = (md.indptr, md.indices, md.values, md.vptr, np.asarray(cols, np.int64), s.D,
                md.weights, r, md.flags, self.efron, self.has_start, md.stop, self._start,
                self._start_order, md.strata_bounds, np.asarray(codes, np.int64), int(n_clusters))
        if len(cols) > 1 and numba_layer.parallel_ok(md.indices.size):
            pieces = np.unique(np.linspace(0, len(cols), min(len(cols), 64) + 1).astype(np.int64))
            return cox_score.cluster_scores_parallel(*args, pieces)
        return cox_score.cluster_scores(*args)

