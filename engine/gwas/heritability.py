"""Per-trait heritability h2 of the null model, every trait at once, in the eigenbasis.

With UY = U^T Y (n' x t rotated traits, n' = n - p_L) and d_j = h2_j S + (1 - h2_j), the null
model's negative log-likelihood of trait j, sigma^2 profiled out, is

    nLL_j(h2) = 1/2 [ sum_k log d_jk + n' (log(2 pi r_j / n') + 1) ],   r_j = sum_k UY_kj^2 / d_jk,

FaST-LMM's ``lmm_cov.nLLeval`` with the covariates regressed out.  Being the likelihood of the
error contrasts U^T y, this is the restricted likelihood (REML, Harville 1974); ``method="ml"``
instead maximises the full likelihood, whose log|V| adds log|X_L^T X_L| - log|X_L^T V^-1 X_L|
to the sum of log d_jk and which uses n for n' (V = h2 Phi + (1 - h2) I; X_L^T V^-1 X_L comes
from the kinship's eigenpairs without covariates, ``MlTerms``).

The minimiser over [0, 0.99999] (FaST-LMM's range) is found for all traits together: a grid
(one matrix product), then the zero of the derivative inside the best grid cell of each trait
by regula falsi (Illinois), vectorised over traits.  The derivative, not the function value,
locates the optimum to about machine precision (a value-based search stops near sqrt(eps),
where nLL is flat), so the h2 of a trait does not depend on which other traits share the call.

``xp`` is the array module: with CuPy every step runs on the device (S and UY moved there once
where they are not yet; ``MlTerms``, t small p x p problems, stays on the host) and h2, sigma2
come back as NumPy arrays.
The squared rotated traits are kept trait-major (Y2 = (UY o UY)^T, t x n'), so that each
trait's sums over k read one contiguous row: on the CPU one Numba pass per trait
(``heritability_kernels``, the traits in parts on the cores' threads, ``parts``), elsewhere
the array expressions of ``_sums``.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import CohortError
from . import heritability_kernels, parts

H2_MAX = 0.99999
_GRID = 101
_ROOT_STEPS = 100
METHODS = ("reml", "ml")


def _d(S, h2):
    """d_jk = h2_j S_k + 1 - h2_j: one row per h2."""
    return h2[:, None] * S[None, :] + (1.0 - h2[:, None])


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def _sums(h2, S, Y2, xp, value, traits=None):
    """Per trait j (every row of Y2, or the rows ``traits``, to which h2 belongs):
    r_j = sum_k Y2_jk / d_jk and, for the ``value``, sum_k log d_jk; for the slope,
    sum_k (S_k - 1) / d_jk and sum_k Y2_jk (S_k - 1) / d_jk^2 (None, for the value)."""
    if xp is np:
        traits = np.arange(h2.size) if traits is None else traits
        r, a, b = (np.empty(h2.size) for _ in range(3))
        parts.run(heritability_kernels.sums, h2.size, lambda rows: (
            S, Y2, h2[rows], traits[rows], value, r[rows], a[rows], b[rows]))
        return r, a, (None if value else b)
    if traits is not None:
        Y2 = Y2[traits]
    d = _d(S, h2)
    r = (Y2 / d).sum(axis=1)
    if value:
        return r, xp.log(d).sum(axis=1), None
    dd = (S - 1.0) / d
    return r, dd.sum(axis=1), (Y2 * dd / d).sum(axis=1)


def negative_loglik(h2, S, Y2, n_eff, ml=None, xp=np):
    """nLL_j(h2_j) for every trait j: ``h2`` (t,), ``Y2`` t x n' squared rotated traits."""
    r, logdet, _ = _sums(h2, S, Y2, xp, value=True)
    logdet = logdet + (0.0 if ml is None else xp.asarray(ml.value(_host(h2))))
    return 0.5 * (logdet + n_eff * (xp.log(2 * np.pi * r / n_eff) + 1.0))


def slope(h2, S, Y2, n_eff, ml=None, xp=np, traits=None):
    """d nLL_j / d h2 at h2_j: 1/2 [sum (S-1)/d - n_eff sum Y2 (S-1)/d^2 / r]; of the
    ``traits`` (rows of Y2; None: all) only, when given."""
    r, tr, q = _sums(h2, S, Y2, xp, value=False, traits=traits)
    g = tr - n_eff * q / r
    return 0.5 * (g + (0.0 if ml is None else xp.asarray(ml.slope(_host(h2)))))


def _grid_nll(grid, S, Y2, n_eff, ml, xp):
    """nLL on the grid for every trait: g x t, as one matrix product."""
    d = _d(S, grid)                                                     # g x n'
    r = (1.0 / d) @ Y2.T                                                # g x t
    logdet = xp.log(d).sum(axis=1) + (0.0 if ml is None else xp.asarray(ml.value(_host(grid))))
    return 0.5 * (logdet[:, None] + n_eff * (xp.log(2 * np.pi * r / n_eff) + 1.0))


def estimate(S: np.ndarray, UY: np.ndarray, n_eff: int, ml=None, xp=np):
    """(h2, sigma2) per trait maximising the (restricted) likelihood; NumPy arrays of shape
    (t,), computed with the array module ``xp``.

    sigma2 is the profiled variance r_j / n_eff at the optimum (FaST-LMM's ``sigma2``).
    """
    if n_eff <= 1:
        raise CohortError(f"pheno: {n_eff} residual degrees of freedom; more individuals than "
                          "covariates are needed.")
    S, UY = xp.asarray(S), xp.asarray(UY)
    Y2 = xp.empty(UY.shape[::-1])                           # trait-major (see above)
    xp.multiply(UY.T, UY.T, out=Y2)
    grid = xp.linspace(0.0, H2_MAX, _GRID)
    nll = _grid_nll(grid, S, Y2, n_eff, ml, xp)
    best = nll.argmin(axis=0)
    lo = grid[xp.maximum(best - 1, 0)]
    hi = grid[xp.minimum(best + 1, _GRID - 1)]
    h2 = _slope_root(lo, hi, lambda h, traits: slope(h, S, Y2, n_eff, ml, xp, traits), xp)
    # the ends of the range (the grid's) are candidates too (a minimum on the boundary)
    candidates = xp.stack([h2, xp.zeros_like(h2), xp.full_like(h2, H2_MAX)])
    values = xp.stack([negative_loglik(h2, S, Y2, n_eff, ml, xp), nll[0], nll[-1]])
    h2 = candidates[values.argmin(axis=0), xp.arange(h2.size)]
    sigma2 = _sums(h2, S, Y2, xp, value=False)[0] / n_eff
    return _host(h2), _host(sigma2)


def _slope_root(lo, hi, slope_at, xp):
    """The zero of each trait's slope in [lo, hi] by regula falsi with the Illinois rule
    (superlinear, slopes only), to a bracket of a few ulps; the end with the smaller nLL side
    where the slope does not change sign (the boundary candidates are checked afterwards).
    ``slope_at(h, traits)``: the slopes at h of those traits (None: all); each step evaluates
    only the traits still searching.  lo and hi are updated in place."""
    g_lo, g_hi = slope_at(lo, None), slope_at(hi, None)
    bracketed = (g_lo < 0) & (g_hi > 0)
    h = xp.where(g_lo >= 0, lo, hi)
    last = xp.zeros(lo.shape, dtype=np.int8)           # which end moved last: -1 lo, +1 hi
    for _ in range(_ROOT_STEPS):
        j = xp.flatnonzero(bracketed & (hi - lo > 4 * np.finfo(float).eps
                                        * xp.maximum(hi, 1e-300)))
        if not j.size:
            break
        a, b, g_a, g_b = lo[j], hi[j], g_lo[j], g_hi[j]
        new = b - g_b * (b - a) / (g_b - g_a)
        new = xp.where((new <= a) | (new >= b), 0.5 * (a + b), new)
        g_new = slope_at(new, j)
        rising, falling, moved = g_new > 0, g_new <= 0, last[j]
        g_a = xp.where(rising & (moved == 1), 0.5 * g_a, g_a)       # Illinois: halve the
        g_b = xp.where(falling & (moved == -1), 0.5 * g_b, g_b)     # end that stays twice
        hi[j], g_hi[j] = xp.where(rising, new, b), xp.where(rising, g_new, g_b)
        lo[j], g_lo[j] = xp.where(falling, new, a), xp.where(falling, g_new, g_a)
        last[j] = xp.where(rising, 1, xp.where(falling, -1, moved))
        h[j] = new
        bracketed[j] = g_new != 0
    return h


class MlTerms:
    """log|V| - log|U^T V U| = log|X^T X| - log|X^T V(h2)^-1 X| and its slope in h2, for the
    full likelihood (one more eigendecomposition, of the kinship itself, where V^-1 is
    diagonal: V^-1 = Z diag(1 / (h2 lambda + 1 - h2)) Z^T)."""

    def __init__(self, K: np.ndarray, X: np.ndarray):
        self.lam, Z = np.linalg.eigh(K)
        self.XZ = Z.T @ X
        self.base = np.linalg.slogdet(X.T @ X)[1]

    def _xvx(self, weights):
        return np.einsum("ka,gk,kb->gab", self.XZ, weights, self.XZ, optimize=True)

    def value(self, h2):
        return self.base - np.linalg.slogdet(self._xvx(1.0 / _d(self.lam, h2)))[1]

    def slope(self, h2):
        d = _d(self.lam, h2)
        M = self._xvx(1.0 / d)
        dM = self._xvx((self.lam - 1.0) / (d * d))
        return np.einsum("gab,gba->g", np.linalg.inv(M), dM)
