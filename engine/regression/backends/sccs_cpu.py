"""The CPU backend of the conditional Poisson (SCCS) likelihood: NumPy state and the Numba
kernels of sccs_kernels.py over eras sorted by case (Suchard2013, sec. 2.3-2.4).

State between calls: eta, the era terms E, the per-case shifts and denominators D (see
sccs_kernels).  ``update`` is Suchard2013's sparse incremental update of the denominators of the
cases a column touches; ``loglik`` re-sums them once per call (once per CCD cycle).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import sccs_kernels as k
from .hazard_state import RESHIFT  # re-centre a case when an era's eta rises this far
from .linear_predictor import column_dots, set_linear_predictor
from .logistic_cpu import cluster_sums


class SccsCpuBackend:
    """One SCCS fit's state.

    Parameters
    ----------
    X : scipy.sparse.csc_matrix, shape (K, p), exposures over eras sorted by case
    case_ptr : ndarray of int64, shape (C + 1,), first era of every case
    length, events : ndarray of float64, shape (K,), l_k and y_k
    """

    name = "cpu"

    def __init__(self, X: sp.csc_matrix, case_ptr, length, events):
        self.X = X
        self._indptr = X.indptr.astype(np.int64)
        self._indices = X.indices.astype(np.int64)
        self._values = X.data.astype(np.float64)
        self._vptr = self._indptr[:-1].copy()       # every column stores its values
        self.case_ptr = np.asarray(case_ptr, np.int64)
        n_cases = self.case_ptr.size - 1
        self.case_of = np.repeat(np.arange(n_cases), np.diff(self.case_ptr))
        self.length = np.asarray(length, np.float64)
        self.y = np.asarray(events, np.float64)
        self.log_length = np.log(self.length)
        self.n = np.add.reduceat(self.y, self.case_ptr[:-1])
        self.w = np.ones(n_cases)
        self.E = np.zeros(self.length.size)
        self.D = np.zeros(n_cases)
        self.shift = np.zeros(n_cases)
        self._r = np.zeros(self.length.size)
        self._q = np.zeros(self.length.size)
        self._block_key = self._block = None
        self._beta = None                    # the beta eta was built from; None after update
        self._ll = None                      # l at the current state, once computed
        self.set_beta(np.zeros(X.shape[1]))

    def set_beta(self, beta: np.ndarray) -> None:
        """eta = X beta and every denominator from scratch (nothing to do when beta is the one
        the state was last built from: solvers re-set the beta they start from)."""
        beta = np.array(beta, np.float64)
        if self._beta is not None and np.array_equal(beta, self._beta):
            return
        self.eta = set_linear_predictor(self._indptr, self._indices, self._values,
                                        self._vptr, beta, self.length.size)
        k.recentre(self.case_ptr, self.eta, self.length, self.E, self.D, self.shift)
        self._beta, self._ll = beta, None

    def set_weights(self, w_case: np.ndarray) -> None:
        """New case weights (a held-out fold is 0, a bootstrap draw its count); eta is kept."""
        self.w = np.ascontiguousarray(w_case, dtype=np.float64)
        self._ll = None

    def update(self, j: int, delta: float) -> None:
        self._beta = self._ll = None
        top = k.update(self._indptr, self._indices, self._values, j, delta, self.case_of,
                       self.eta, self.length, self.E, self.D, self.shift)
        if top > RESHIFT:
            k.recentre(self.case_ptr, self.eta, self.length, self.E, self.D, self.shift)

    def grad_hess(self, j: int) -> tuple[float, float]:
        return k.grad_hess(self._indptr, self._indices, self._values, j, self.case_of, self.y,
                           self.E, self.D, self.w, self.n)

    def loglik(self) -> float:
        if self._ll is None:
            self._ll = k.loglik(self.case_ptr, self.eta, self.y, self.log_length, self.E,
                                self.D, self.shift, self.w, self.n)
        return self._ll

    def _residuals(self):
        k.residuals(self.case_ptr, self.y, self.E, self.D, self.w, self.n, self._r, self._q)
        return self._r, self._q

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        ll = self.loglik()
        r, _ = self._residuals()
        return ll, column_dots(self._indptr, self._indices, self._values, self._vptr, r)

    def cluster_scores(self, cols, codes, n_clusters) -> sp.csr_matrix:
        """(len(cols), n_clusters), sparse: per cluster (default: the case), the sum of its
        eras' score contributions x_kj r_k."""
        r, _ = self._residuals()
        return cluster_sums(self.X[:, np.asarray(cols, np.int64)], r, codes, n_clusters)

    def information(self, cols) -> tuple[float, np.ndarray, np.ndarray]:
        """l, gradient and observed information over ``cols`` (see information_at)."""
        ll = self.loglik()
        r, q = self._residuals()
        g, info = self.information_at(cols, r, q)
        return ll, g, info

    def information_at(self, cols, r, q) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and information over ``cols`` from the per-era r and p = E / D
        (sccs_kernels.information_matrix; the columns' row block is kept while they stay)."""
        cols = np.asarray(cols, np.int64)
        key = cols.tobytes()
        if self._block_key != key:
            block = self.X[:, cols].tocsr()
            block.sort_indices()
            self._block = (block.indptr.astype(np.int64), block.indices.astype(np.int64),
                           block.data.astype(np.float64))
            self._block_key = key
        return k.information_matrix(*self._block, cols.size, self.case_ptr, self.w * self.n,
                                    q, r)

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """Log-likelihood, gradient on ``coords`` and the proximal-Newton step: the exact
        quadratic model (block-diagonal Hessian in eta) minimised by coordinate descent
        (sccs_kernels.quadratic_cd).  ``fresh`` is accepted for the interface; nothing is
        cached between steps."""
        ll = self.loglik()
        r, q = self._residuals()
        delta, g = k.quadratic_cd(self._indptr, self._indices, self._values,
                                  np.asarray(coords, np.int64), self.case_of, self.D.size, r, q,
                                  self.w * self.n, np.asarray(beta, np.float64), lam1, lam2,
                                  tol, max_cycles)
        return ll, g, delta

