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
import numpy as np
from scipy.linalg import cho_factor, cho_solve, get_lapack_funcs


class PrecisionDraw:
    """Holds X'X (formed once) and a work buffer for the per-iteration Cholesky factor."""

    def __init__(self, X):
        X64 = X.astype(np.float64, copy=False)
        self.XtX = np.asfortranarray((X64.T @ X64).astype(X.dtype))
        self._work = np.empty_like(self.XtX, order="F")
        self._potrf, self._trtrs = get_lapack_funcs(("potrf", "trtrs"), (self.XtX,))

    def __call__(self, Xtz, prior_precision, s):
        """beta ~ N(Q^-1 X'z, Q^-1), Q = X'X + diag(prior_precision); s ~ N(0, I_p)."""
        work = self._work
        np.copyto(work, self.XtX)
        work.flat[:: work.shape[0] + 1] += prior_precision
        factor, info = self._potrf(work, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(
                f"X'X + tau^-2 Lambda^-2 is not positive definite (LAPACK potrf info={info}); "
                "with a flat prior the design must have full column rank.")
        half, _ = self._trtrs(factor, Xtz.astype(work.dtype, copy=False), lower=1, trans=0)
        beta, _ = self._trtrs(factor, half + s, lower=1, trans=1)
        return beta.astype(np.float64, copy=False)


def bcm_draw(X, z, prior_variance, u_std, delta):
    """beta ~ N(Sigma X'z, Sigma), Sigma = (X'X + D^-1)^-1, D = diag(prior_variance), for p > N.

    u_std ~ N(0, I_p) and delta ~ N(0, I_N) are the standard normals of the draw.
    """
    u = np.sqrt(prior_variance) * u_std
    v = X @ u + delta
    M = (X * prior_variance) @ X.T
    M.flat[:: M.shape[0] + 1] += 1.0
    w = cho_solve(cho_factor(M, lower=True, check_finite=False), z - v, check_finite=False)
    return u + prior_variance * (X.T @ w)
