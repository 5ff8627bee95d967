"""The CPU backend of the Fine-Gray model: CpuBackend's state (eta, D, sparse updates) with the
forward-backward scans of cpu_fine_gray and the sandwich kernels of cpu_fine_gray_sandwich."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import cpu_fine_gray as fg
from . import cpu_fine_gray_sandwich as sw
from .cpu import CpuBackend
from ..modeldata import ModelData


class FineGrayCpuBackend(CpuBackend):
    """Fine-Gray scans on the CPU for one ModelData whose EVENT flags mark cause k.

    Parameters
    ----------
    md : ModelData, rows sorted by stratum then time descending
    omega : (n,) float64, 1/G(y_r-) for competing rows, 0 otherwise (sorted order)
    gl : (n,) float64, G(y_r-) of each row's censoring group (sorted order)
    censored : (n,) bool, rows that end censored (sorted order)
    by_stratum : bool, G was estimated per stratum (else one G for all rows)
    """

    def __init__(self, md: ModelData, omega: np.ndarray, gl: np.ndarray, censored: np.ndarray,
                 by_stratum: bool):
        if md.start is not None:
            raise ValueError("Fine-Gray needs one row per subject (no entry times).")
        self.omega = np.ascontiguousarray(omega, np.float64)
        self.gl = np.ascontiguousarray(gl, np.float64)
        self.censored = np.ascontiguousarray(censored, bool)
        self.by_stratum = bool(by_stratum)
        self._stratum = np.repeat(np.arange(md.strata_bounds.size - 1),
                                  np.diff(md.strata_bounds)).astype(np.int64)
        self._suf = [np.zeros(md.n) for _ in range(3)]
        super().__init__(md, efron=False)

    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2: one backward and one forward O(N) scan."""
        md = self.md
        return fg.coordinate_grad_hess(md.indptr, md.indices, md.values, md.vptr, j,
                                       self._scratch, self.D, md.weights, md.flags, self.omega,
                                       self.gl, md.strata_bounds, *self._suf)

    def _pass(self, want: int):
        md = self.md
        return fg.fine_gray_pass(self.eta, self.D, md.weights, md.flags, self.omega, self.gl,
                                 self.shift, md.strata_bounds, self._suf[0], want)

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log pseudo-likelihood, gradient and observed information over columns ``cols``.

        I = X^T diag(r) X - sum_g W_g m_g m_g^T  (see cpu_fine_gray.event_outer_products).
        """
        md = self.md
        cols = np.asarray(cols, np.int64)
        ll, r, _ = self._pass(1)          # also leaves S_suf[omega D] in self._suf[0]
        Xs = self.sorted_block(cols)
        g = Xs.T @ (self._wev - r)
        first = (Xs.T @ sp.diags(r) @ Xs).toarray()
        Xr = Xs.tocsr()
        chunk = int(max(64, min(4096, 2 ** 22 // max(1, cols.size))))
        M = fg.event_outer_products(Xr.indptr.astype(np.int64), Xr.indices.astype(np.int64),
                                    Xr.data, cols.size, self.D, md.weights, md.flags,
                                    self.omega, self.gl, md.strata_bounds, self._suf[0], chunk)
        return ll, np.asarray(g).ravel(), first - M

    def sandwich(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Observed information I and the middle of Fine & Gray's sandwich, sum_i u_i u_i^T,
        over columns ``cols``: O(N s + N s^2) time, O(N s) memory."""
        md = self.md
        cols = np.asarray(cols, np.int64)
        info = self.information(cols)[2]    # also leaves S_suf[omega D] in self._suf[0]
        X = np.ascontiguousarray(self.sorted_block(cols).toarray())
        alpha, M = sw.group_means(X, self.D, md.weights, md.flags, self.omega, self.gl,
                                  md.strata_bounds, self._suf[0])
        eta = sw.score_residuals(X, self.D, md.weights, md.flags, self.omega, self.gl,
                                 md.strata_bounds, alpha, M)
        n_strata = md.strata_bounds.size - 1
        cgroup = self._stratum if self.by_stratum else np.zeros(md.n, np.int64)
        order = np.argsort(md.stop, kind="stable").astype(np.int64)
        psi = sw.censoring_residuals(X, self.D, md.weights, md.flags, self.omega, self.gl,
                                     md.stop, self._stratum, cgroup, self.censored, alpha, M,
                                     n_strata, n_strata if self.by_stratum else 1,
                                     self.by_stratum, order)
        u = eta + psi
        return info, u.T @ u
