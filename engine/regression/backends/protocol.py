"""What a likelihood asks of its backend: the few fused kernels of the papers' CCD and of
proximal Newton (design: "a backend is small").  Every ``<likelihood>_<device>`` class answers
these; tests/engine/regression/test_contract.py checks each one the same way.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Backend(Protocol):
    """One fit's state over one prepared data set, on one device."""

    name: str                                   # "cpu" | "gpu"

    def set_beta(self, beta: np.ndarray) -> None:
        """Recompute the linear predictor at ``beta``."""

    def set_weights(self, w: np.ndarray) -> None:
        """Replace the case weights (a held-out fold is 0, a bootstrap count c is c)."""

    def update(self, j: int, delta: float) -> None:
        """beta_j += delta, updating the linear predictor sparsely (O(nnz_j))."""

    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2 at the current beta."""

    def loglik(self) -> float:
        """The log (partial, pseudo) likelihood at the current beta."""

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        """The log-likelihood and its gradient over every coordinate."""

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The log-likelihood, the gradient on ``cols`` and the observed information over
        ``cols``."""

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles,
                       fresh=True) -> tuple[float, np.ndarray, np.ndarray]:
        """(ll, g, delta): the minimiser of the penalised quadratic model (diagonal Hessian in
        eta) over ``coords`` (proximal Newton's inner problem)."""
