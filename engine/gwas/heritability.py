"""Per-trait heritability h2 of the null model, every trait at once, in the eigenbasis.

With UY = U^T Y (n' x t rotated traits, n' = n - p_L) and d_j = h2_j S + (1 - h2_j), the null
model's negative log-likelihood of trait j, sigma^2 profiled out, is

    nLL_j(h2) = 1/2 [ sum_k log d_jk + n' (log(2 pi r_j / n') + 1) ],   r_j = sum_k UY_kj^2 / d_jk,

FaST-LMM's ``lmm_cov.nLLeval`` with the covariates regressed out.  Being the likelihood of the
error contrasts U^T y, this is the restricted likelihood (REML, Harville 1974); ``method="ml"``
instead maximises the full likelihood, whose log|V| adds log|X_L^T X_L| - log|X_L^T V^-1 X_L|
to the sum of log d_jk and which uses n for n' (V = h2 Phi + (1 - h2) I; X_L^T V^-1 X_L comes from the
kinship's eigenpairs without covariates, ``ml_terms``).

The minimiser over [0, 0.99999] (FaST-LMM's range) is found for all traits together: a grid
(one matrix product), then bisection on the derivative inside the best grid cell of each trait,
vectorised over traits.  The derivative, not the function value, locates the optimum to about
machine precision (a value-based search stops near sqrt(eps), where nLL is flat), so the h2 of
a trait does not depend on which other traits share the call.
"""
from __future__ import annotations

import numpy as np

from ..errors import CohortError

H2_MAX = 0.99999
_GRID = 101
_BISECTIONS = 60
METHODS = ("reml", "ml")


def _d(S, h2):
    return S[:, None] * h2[None, :] + (1.0 - h2[None, :])


def negative_loglik(h2, S, UY2, n_eff, ml=None):
    """nLL_j(h2_j) for every trait j: ``h2`` (t,), ``UY2`` n' x t squared rotated traits."""
    d = _d(S, h2)
    r = (UY2 / d).sum(axis=0)
    logdet = np.log(d).sum(axis=0) + (0.0 if ml is None else ml.value(h2))
    return 0.5 * (logdet + n_eff * (np.log(2 * np.pi * r / n_eff) + 1.0))


def slope(h2, S, UY2, n_eff, ml=None):
    """d nLL_j / d h2 at h2_j: 1/2 [sum (S-1)/d - n_eff sum UY2 (S-1)/d^2 / r]."""
    d = _d(S, h2)
    dd = (S - 1.0)[:, None] / d
    r = (UY2 / d).sum(axis=0)
    g = dd.sum(axis=0) - n_eff * (UY2 * dd / d).sum(axis=0) / r
    return 0.5 * (g + (0.0 if ml is None else ml.slope(h2)))


def _grid_nll(grid, S, UY2, n_eff, ml):
    """nLL on the grid for every trait: g x t, as one matrix product."""
    d = _d(S, grid)                                                     # n' x g
    r = (1.0 / d).T @ UY2                                               # g x t
    logdet = np.log(d).sum(axis=0) + (0.0 if ml is None else ml.value(grid))
    return 0.5 * (logdet[:, None] + n_eff * (np.log(2 * np.pi * r / n_eff) + 1.0))


def estimate(S: np.ndarray, UY: np.ndarray, n_eff: int, ml=None):
    """(h2, sigma2) per trait maximising the (restricted) likelihood; arrays of shape (t,).

    sigma2 is the profiled variance r_j / n_eff at the optimum (FaST-LMM's ``sigma2``).
    """
    if n_eff <= 1:
        raise CohortError(f"pheno: {n_eff} residual degrees of freedom; more individuals than "
                          "covariates are needed.")
    UY2 = UY * UY
    grid = np.linspace(0.0, H2_MAX, _GRID)
    best = _grid_nll(grid, S, UY2, n_eff, ml).argmin(axis=0)
    lo = grid[np.maximum(best - 1, 0)]
    hi = grid[np.minimum(best + 1, _GRID - 1)]
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        rising = slope(mid, S, UY2, n_eff, ml) > 0
        hi, lo = np.where(rising, mid, hi), np.where(rising, lo, mid)
    h2 = 0.5 * (lo + hi)
    # the ends of the range are candidates too (a minimum on the boundary)
    candidates = np.stack([h2, np.zeros_like(h2), np.full_like(h2, H2_MAX)])
    values = np.stack([negative_loglik(c, S, UY2, n_eff, ml) for c in candidates])
    h2 = candidates[values.argmin(axis=0), np.arange(h2.size)]
    sigma2 = (UY2 / _d(S, h2)).sum(axis=0) / n_eff
    return h2, sigma2


class MlTerms:
    """log|V| - log|U^T V U| = log|X^T X| - log|X^T V(h2)^-1 X| and its slope in h2, for the
    full likelihood (one more eigendecomposition, of the kinship itself, where V^-1 is
    diagonal: V^-1 = Z diag(1 / (h2 lambda + 1 - h2)) Z^T)."""

    def __init__(self, K: np.ndarray, X: np.ndarray):
        self.lam, Z = np.linalg.eigh(K)
        self.XZ = Z.T @ X
        self.base = np.linalg.slogdet(X.T @ X)[1]

    def _xvx(self, weights):
        return np.einsum("ka,kg,kb->gab", self.XZ, weights, self.XZ, optimize=True)

    def value(self, h2):
        return self.base - np.linalg.slogdet(self._xvx(1.0 / _d(self.lam, h2)))[1]

    def slope(self, h2):
        d = _d(self.lam, h2)
        M = self._xvx(1.0 / d)
        dM = self._xvx((self.lam - 1.0)[:, None] / (d * d))
        return np.einsum("gab,gba->g", np.linalg.inv(M), dM)
