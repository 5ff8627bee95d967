"""beta | z, lambda, tau: one draw from N(Sigma X'z, Sigma), Sigma = (X'X + D^-1)^-1.

D = diag(prior variances) (tau^2 lambda_j^2 for shrunk coefficients). Two routes:

- ``precision_draw`` (p <= N), Terenin, Dong & Draper (2019, sec. 5, "beta" steps i-viii): X'X is
  formed once; per iteration the precision Q = X'X + D^-1 is factorised once, Q = L L', and
  beta = L^-T (L^-1 X'z + s) with s ~ N(0, I_p). That is the paper's mean
  mu = Q^-1 X'z plus noise L^-T s ~ N(0, Q^-1), in two triangular solves and no inverse.
- ``bcm_draw`` (p > N), Bhattacharya, Chakraborty & Mallick (2016, "Fast sampling with Gaussian
  scale mixture priors in high-dimensional regression", Biometrika, Algorithm 2): u ~ N(0, D),
  delta ~ N(0, I_N), v = X u + delta, solve (X D X' + I_N) w = z - v, beta = u + D X' w.
  O(N^2 p) instead of O(p^3).

In float32 (the paper's precision on the GPU) X, X'X, the factor and the solves are single
precision; z, the scales and the kept draws stay float64.
"""
import copy
import ctypes

import numba
import numpy as np
from numba.extending import get_cython_function_address
from scipy.linalg import cho_factor, cho_solve, get_blas_funcs, solve_triangular

_POINTERS = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)
_POTRF = {np.dtype(np.float64): _POINTERS(get_cython_function_address(
              "scipy.linalg.cython_lapack", "dpotrf")),
          np.dtype(np.float32): _POINTERS(get_cython_function_address(
              "scipy.linalg.cython_lapack", "spotrf"))}
_LOWER = ord("L")


def _factor_kernel(potrf):
    """Q = XtX + diag(d) into ``work`` and its lower Cholesky factor in place, by LAPACK's
    potrf called directly (SciPy's wrapper would hold the GIL, which the sampler's second
    thread needs); returns LAPACK's info. The copy is written as loops over the (Fortran)
    columns: Numba compiles them in 0.6 s, ``work[:] = XtX`` in 3 s, paid by every process's
    first draw (the ctypes pointer makes the kernel uncacheable)."""
    @numba.njit(nogil=True)
    def factor(XtX, d, work):
        p = XtX.shape[0]
        for j in range(p):
            for i in range(p):
                work[i, j] = XtX[i, j]
            work[j, j] += d[j]
        uplo = np.array([_LOWER], np.uint8)
        size = np.array([p], np.int32)
        info = np.zeros(1, np.int32)
        potrf(uplo.ctypes, size.ctypes, work.ctypes, size.ctypes, info.ctypes)
        return info[0]
    return factor


_FACTOR = {dtype: _factor_kernel(potrf) for dtype, potrf in _POTRF.items()}


class PrecisionDraw:
    """Holds X'X (formed once) and a work buffer for the per-iteration Cholesky factor.

    ``factor(d)`` (Q = X'X + diag(d), factorised in place; releases the GIL, so it can run
    beside the z step) then ``solve(X'z, s)``, or both at once by calling the object."""

    def __init__(self, X):
        X64 = X.astype(np.float64, copy=False)
        self.XtX = np.asfortranarray((X64.T @ X64).astype(X.dtype))
        self._work = np.empty_like(self.XtX, order="F")
        self._factor = _FACTOR[self.XtX.dtype]
        self._trsv, = get_blas_funcs(("trsv",), (self.XtX,))

    def factor(self, prior_precision):
        """Cholesky factor L of Q = X'X + diag(prior_precision), kept for ``solve``."""
        d = np.ascontiguousarray(prior_precision, dtype=np.float64)   # added in double (GPU too)
        info = self._factor(self.XtX, d, self._work)
        if info != 0:
            raise np.linalg.LinAlgError(
                f"X'X + tau^-2 Lambda^-2 is not positive definite (LAPACK potrf info={info}); "
                "with a flat prior the design must have full column rank.")

    def twin(self):
        """A PrecisionDraw on the same X'X with its own factor (a second Q at once)."""
        other = copy.copy(self)
        other._work = np.empty_like(self._work)
        return other

    def log_det(self):
        """log det Q of the last factor: 2 sum_j log L_jj."""
        return 2.0 * float(np.log(np.diagonal(self._work).astype(np.float64)).sum())

    def solve(self, Xtz, s):
        """beta = L^-T (L^-1 X'z + s) ~ N(Q^-1 X'z, Q^-1) with the last factor."""
        return self.back(self.whiten(Xtz) + s)

    def whiten(self, Xtz):
        """L^-1 X'z; its squared norm is z'X Q^-1 X'z (the marginal augmentation's)."""
        return self._trsv(self._work, Xtz.astype(self._work.dtype, copy=False), lower=1,
                          trans=0)

    def back(self, v):
        """L^-T v, in float64."""
        beta = self._trsv(self._work, np.asarray(v, dtype=self._work.dtype), lower=1,
                          trans=1, overwrite_x=1)
        return beta.astype(np.float64, copy=False)

    def __call__(self, Xtz, prior_precision, s):
        """beta ~ N(Q^-1 X'z, Q^-1), Q = X'X + diag(prior_precision); s ~ N(0, I_p)."""
        self.factor(prior_precision)
        return self.solve(Xtz, s)


def bcm_draw(X, z, prior_variance, u_std, delta, expansion=None):
    """beta ~ N(Sigma X'z, Sigma), Sigma = (X'X + D^-1)^-1, D = diag(prior_variance), for p > N.

    u_std ~ N(0, I_p) and delta ~ N(0, I_N) are the standard normals of the draw. With
    ``expansion`` (a callable of q = z'(I + X D X')^-1 z returning a scale g, the marginal
    augmentation of expansion.py) z is replaced by g z first. Returns (beta, g).
    """
    u = np.sqrt(prior_variance) * u_std
    v = X @ u + delta
    M = (X * prior_variance) @ X.T
    M.flat[:: M.shape[0] + 1] += 1.0
    factor = cho_factor(M, lower=True, check_finite=False)
    g = 1.0
    if expansion is not None:
        w = solve_triangular(factor[0], z, lower=True, check_finite=False)
        g = expansion(w @ w)
    w = cho_solve(factor, g * z - v, check_finite=False)
    return u + prior_variance * (X.T @ w), g
