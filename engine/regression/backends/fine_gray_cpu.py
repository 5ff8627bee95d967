"""The Fine-Gray pseudo-likelihood on the CPU: the forward-backward scans of fine_gray_kernels
and the sandwich kernels of fine_gray_sandwich over the same HazardState the Cox backend uses."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import fine_gray_kernels as fg
from . import fine_gray_sandwich as sw
from .hazard_state import HazardState
from ..modeldata import ModelData


class FineGrayCpuBackend:
    """Fine-Gray scans on the CPU for one ModelData whose EVENT flags mark cause k.

    Parameters
    ----------
    md : ModelData, rows sorted by stratum then time descending
    omega : (n,) float64, 1/G(y_r-) for competing rows, 0 otherwise (sorted order)
    gl : (n,) float64, G(y_r-) of each row's censoring group (sorted order)
    censored : (n,) bool, rows that end censored (sorted order)
    by_stratum : bool, G was estimated per stratum (else one G for all rows)
    """

    name = "cpu"

    def __init__(self, md: ModelData, omega: np.ndarray, gl: np.ndarray, censored: np.ndarray,
                 by_stratum: bool, events_first: bool = False):
        if md.start is not None:
            raise ValueError("Fine-Gray needs one row per subject (no entry times).")
        self.md = md
        self.omega = np.ascontiguousarray(omega, np.float64)
        self.gl = np.ascontiguousarray(gl, np.float64)
        self.censored = np.ascontiguousarray(censored, bool)
        self.by_stratum = bool(by_stratum)
        self.events_first = bool(events_first)
        self._stratum = np.repeat(np.arange(md.strata_bounds.size - 1),
                                  np.diff(md.strata_bounds)).astype(np.int64)
        self._suf = [np.zeros(md.n) for _ in range(3)]
        self._scratch = np.zeros(md.n)
        self.state = HazardState(md)

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        self.state.set_beta(beta)

    def set_weights(self, w_sorted: np.ndarray) -> None:
        self.state.set_weights(w_sorted)

    def update(self, j: int, delta: float) -> None:
        self.state.update(j, delta)

    def set_censoring(self, omega: np.ndarray, gl: np.ndarray) -> None:
        """New censoring weights (sorted order), after the case weights changed."""
        self.omega = np.ascontiguousarray(omega, np.float64)
        self.gl = np.ascontiguousarray(gl, np.float64)

    # -- scans ---------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2: one backward and one forward O(N) scan."""
        md, s = self.md, self.state
        return fg.coordinate_grad_hess(md.indptr, md.indices, md.values, md.vptr, j,
                                       self._scratch, s.D, md.weights, md.flags, self.omega,
                                       self.gl, md.strata_bounds, *self._suf)

    def risk_set_pass(self, want: int):
        """(ll, r, h) as the Cox backend's, over the Fine-Gray risk sets."""
        md, s = self.md, self.state
        return fg.fine_gray_pass(s.eta, s.D, md.weights, md.flags, self.omega, self.gl,
                                 s.shift, md.strata_bounds, self._suf[0], want)

    def loglik(self) -> float:
        """Log pseudo-likelihood at the current beta."""
        return self.risk_set_pass(0)[0]

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        ll, r, _ = self.risk_set_pass(1)
        return ll, self.state.gradient(r)

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """The proximal-Newton step, as the Cox backend's."""
        ll, r, h = self.risk_set_pass(2)
        return self.state.quadratic_step(ll, r, h, coords, beta, lam1, lam2, tol, max_cycles,
                                         fresh)

    def release_scratch(self) -> None:
        """See models.base.BackendModel.release_scratch."""
        self.state.inner.release()

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log pseudo-likelihood, gradient and observed information over columns ``cols``.

        I = X^T diag(r) X - sum_g W_g m_g m_g^T  (see fine_gray_kernels.event_outer_products).
        """
        md, s = self.md, self.state
        cols = np.asarray(cols, np.int64)
        ll, r, _ = self.risk_set_pass(1)          # also leaves S_suf[omega D] in self._suf[0]
        Xs = s.sorted_block(cols)
        g = Xs.T @ (s.wev - r)
        first = (Xs.T @ sp.diags(r) @ Xs).toarray()
        Xr = Xs.tocsr()
        chunk = int(max(64, min(4096, 2 ** 22 // max(1, cols.size))))
        M = fg.event_outer_products(Xr.indptr.astype(np.int64), Xr.indices.astype(np.int64),
                                    Xr.data, cols.size, s.D, md.weights, md.flags,
                                    self.omega, self.gl, md.strata_bounds, self._suf[0], chunk)
        return ll, np.asarray(g).ravel(), first - M

    def sandwich(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Observed information I and the middle of Fine & Gray's sandwich, sum_i u_i u_i^T,
        over columns ``cols``: O(N s + N s^2) time, O(N s) memory."""
        md, s = self.md, self.state
        cols = np.asarray(cols, np.int64)
        info = self.information(cols)[2]    # also leaves S_suf[omega D] in self._suf[0]
        X = np.ascontiguousarray(s.sorted_block(cols).toarray())
        alpha, M = sw.group_means(X, s.D, md.weights, md.flags, self.omega, self.gl,
                                  md.strata_bounds, self._suf[0])
        eta = sw.score_residuals(X, s.D, md.weights, md.flags, self.omega, self.gl,
                                 md.strata_bounds, alpha, M)
        n_strata = md.strata_bounds.size - 1
        cgroup = self._stratum if self.by_stratum else np.zeros(md.n, np.int64)
        order = np.argsort(md.stop, kind="stable").astype(np.int64)
        psi = sw.censoring_residuals(X, s.D, md.weights, md.flags, self.omega, self.gl,
                                     md.stop, self._stratum, cgroup, self.censored, alpha, M,
                                     n_strata, n_strata if self.by_stratum else 1,
                                     self.by_stratum, order, self.events_first)
        u = eta + psi
        return info, u.T @ u
