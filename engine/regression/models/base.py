"""What every likelihood shares: solvers talk to a model, the model hands the scans to its
backend.

The interface: ``set_beta(beta)``, ``update(j, delta)``, ``grad_hess(j)``, ``loglik()``,
``loglik_gradient()``, ``information(cols)``, ``quadratic_step(...)``, plus the attributes
``names``, ``p`` and ``scale`` (the range of each column, to judge a diverging coefficient).
"""
from __future__ import annotations

import numpy as np

from ..options import FLOAT32_TOL


class BackendModel:
    """A likelihood whose numbers come from ``self.backend`` (set by the subclass)."""

    backend = None

    @property
    def rounding(self) -> float:
        """The relative size of a change in the log-likelihood below which a line search
        cannot tell a rise from the backend's rounding: 1e-12 in float64, FLOAT32_TOL in
        float32 (precision="float32" on the GPU, whose sums of N terms round at about 1e-7
        relative each: a stricter test rejected every Newton step near the optimum and
        stopped the fit up to 1.2e-3 of max |beta| away, seen on an H100)."""
        return FLOAT32_TOL if getattr(self.backend, "dtype", None) == np.float32 else 1e-12

    def start(self) -> np.ndarray:
        """Where a solve without ``init`` starts: zeros (every hazard ratio 1)."""
        return np.zeros(self.p)

    def set_beta(self, beta):
        """Recompute the linear predictor at ``beta``."""
        self.backend.set_beta(beta)

    def update(self, j, delta):
        """beta_j += delta, updating the linear predictor sparsely."""
        self.backend.update(j, delta)

    def grad_hess(self, j):
        """dl/dbeta_j and -d2l/dbeta_j^2: one coordinate of the papers' CCD."""
        return self.backend.grad_hess(j)

    def loglik(self):
        """The log-likelihood at the current beta; -inf where it does not exist: a trial step
        so far along a diverging direction (more covariates than events, separation) that every
        risk score of a risk set underflows to 0 (the kernels divide by that sum), which the
        line searches then reject and halve."""
        try:
            return self.backend.loglik()
        except ZeroDivisionError:
            return -np.inf

    def loglik_gradient(self):
        """Log-likelihood and its gradient over every coordinate."""
        return self.backend.loglik_gradient()

    def loglik_gradient_on(self, cols):
        """Log-likelihood and a gradient exact on ``cols`` (elsewhere it may be 0): what the KKT
        check and the strong rule read, the L1 coordinates at zero.  From the backend's
        ``loglik_gradient_on`` where it has one (O(N + nnz of cols)), else the full gradient."""
        on = getattr(self.backend, "loglik_gradient_on", None)
        return self.backend.loglik_gradient() if on is None else on(cols)

    def release_scratch(self) -> None:
        """Drop what the backend keeps only for its next step (a working set's row block and
        Gram matrix, the dense columns' row-major copy), once a fit is done: a kept fit then
        holds its data and no second copy of it (10^6 rows x 100 dense columns: 0.8 GB).  The
        next solve or information builds them again.  A backend that keeps none has no
        ``release_scratch``."""
        release = getattr(self.backend, "release_scratch", None)
        if release is not None:
            release()

    def information(self, cols):
        """Log-likelihood, gradient and observed information over the columns ``cols``.  Over
        one column the information is that column's curvature, from the fused pass of
        ``grad_hess`` rather than the backend's row block (a grid variant's one unpenalised
        exposure, or its alias check: 10^6 rows on the CPU, 5-7 ms instead of 42-46 ms)."""
        cols = np.asarray(cols, np.int64)
        if cols.size == 1:
            g, h = self.backend.grad_hess(int(cols[0]))
            return self.loglik(), np.array([g], np.float64), np.array([[h]], np.float64)
        return self.backend.information(cols)

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """The proximal-Newton step (see backends.protocol.Backend.quadratic_step)."""
        return self.backend.quadratic_step(coords, beta, lam1, lam2, tol, max_cycles, fresh)

    def cluster_scores(self, cols, codes, n_clusters):
        """(len(cols), n_clusters): per cluster, the sum of its rows' weighted score residuals
        (contributions to dl/dbeta) on each column in ``cols``; ``codes`` gives the cluster of
        each row in the caller's order.  The middle of the robust variance."""
        return self.backend.cluster_scores(cols, self.to_backend_rows(codes), n_clusters)

    def to_backend_rows(self, values):
        """A per-row array of the caller's order in the backend's row order."""
        return values

