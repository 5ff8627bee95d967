"""Poisson regression of events on person-time on the CPU: the rates model of a cohort paper
(adjusted incidence rate ratios; on follow-up split into bands, the piecewise-exponential model).

Row i has y_i events in t_i units of person-time and rate exp(eta_i), so its mean is mu_i =
t_i exp(eta_i) (log t_i the offset): l = sum_i w_i (y_i (eta_i + log t_i) - mu_i) (statsmodels'
and R's glm log-likelihood for 0/1 counts, whose log y! is 0), r_i = dl/deta_i = w_i (y_i -
mu_i) and h_i = -d2l/deta_i^2 = w_i mu_i.  The Hessian in eta is diagonal, as for logistic
regression, so everything but the row terms is LogisticCpuBackend's: the CSC columns, the
proximal-Newton step with the intercept profiled out, the information and the cluster scores.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from .logistic_cpu import LogisticCpuBackend


@njit(cache=True, nogil=True)
def _row_terms(i, eta, log_t, y, w, r, h):
    """r_i and h_i of one row; returns its log-likelihood term."""
    mu = math.exp(eta[i] + log_t[i])
    r[i] = w[i] * (y[i] - mu)
    h[i] = w[i] * mu
    return w[i] * (y[i] * (eta[i] + log_t[i]) - mu) if w[i] > 0.0 else 0.0


@njit(cache=True, nogil=True)
def poisson_terms(eta, log_t, y, w, r, h):
    """r = dl/deta and h = -d2l/deta^2 of every row, in place; returns l: O(N)."""
    ll = 0.0
    for i in range(eta.size):
        ll += _row_terms(i, eta, log_t, y, w, r, h)
    return ll


@njit(cache=True, nogil=True)
def update_coordinate(indptr, indices, values, j, delta, eta, log_t, y, w, r, h):
    """beta_j += delta: eta, r and h on the rows of column j only, O(nnz_j)."""
    for t in range(indptr[j], indptr[j + 1]):
        i = indices[t]
        eta[i] += delta * values[t]
        _row_terms(i, eta, log_t, y, w, r, h)


class PoissonCpuBackend(LogisticCpuBackend):
    """One Poisson fit's state (eta, r, h) over the design ``X`` (CSC, intercept column 0),
    the events ``y`` and the person-time ``exposure`` (> 0) of each row."""

    def __init__(self, X: sp.csc_matrix, y: np.ndarray, w: np.ndarray, exposure: np.ndarray):
        self.log_t = np.log(np.asarray(exposure, np.float64))
        super().__init__(X, y, w)

    def _terms(self) -> float:
        return poisson_terms(self.eta, self.log_t, self.y, self.w, self.r, self.h)

    def update(self, j: int, delta: float) -> None:
        update_coordinate(self._indptr, self._indices, self._values, j, delta, self.eta,
                          self.log_t, self.y, self.w, self.r, self.h)
        self._ll = None
