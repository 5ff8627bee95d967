r"""The horseshoe probit Gibbs sampler of Terenin, Dong & Draper (2019), "GPU-accelerated Gibbs
sampling: a case study of the Horseshoe Probit model", Statistics and Computing 29, 301-310.

Model (sec. 5, eqs. 9-10), with the latent variables of Albert & Chib (1993):

    y_i = 1(z_i > 0),            z_i | beta ~ N(x_i beta, 1)          i = 1..N
    beta_j | lambda_j, tau ~ N(0, lambda_j^2 tau^2),   lambda_j ~ C+(0, 1),   tau ~ C+(0, 1)

The half-Cauchy scales are written as Makalic & Schmidt (2015, "A simple sampler for the
horseshoe estimator") do, through inverse-gamma mixtures with auxiliaries nu_j and xi:

    lambda_j^2 | nu_j ~ IG(1/2, 1/nu_j),   nu_j ~ IG(1/2, 1),
    tau^2 | xi ~ IG(1/2, 1/xi),            xi ~ IG(1/2, 1).

Full conditionals (sec. 5, eq. 11; the authors' reference code GPUHorseshoe samples the
reciprocals, as here), with p_s the number of shrunk coefficients:

    z_i | beta          ~ TN(x_i beta, 1, y_i): R+ if y_i = 1, R- if y_i = 0     (truncated_normal)
    lambda_j^-2 | .     ~ Exp(rate = nu_j^-1 + tau^-2 beta_j^2 / 2)
    tau^-2 | .          ~ Gamma(shape = (p_s + 1) / 2, rate = xi^-1 + sum_j lambda_j^-2 beta_j^2 / 2)
    beta | .            ~ N(Sigma X'z, Sigma),  Sigma = (X'X + tau^-2 Lambda^-2)^-1  (gaussian_draw)
    nu_j^-1 | .         ~ Exp(rate = 1 + lambda_j^-2)
    xi^-1 | .           ~ Exp(rate = 1 + tau^-2)

One iteration updates, as sec. 5 orders them: (i) z and lambda^-2 (in parallel), then tau^-2;
(ii) beta, nu^-1 and xi^-1 (in parallel). The Cholesky factor of (ii)'s precision needs only
lambda and tau, so with ``threads=2`` it is computed in a second thread while z and X'z are
(in one pass over X, latent_pass). With ``expansion`` (the default) z is rescaled to g z just
before the beta draw, g the marginal augmentation's scale (expansion.py): the same posterior,
better mixing of large coefficients, at the cost of one gamma draw.
Each element of each conditional draws from its own Philox stream (rng.py), the same on the
GPU (gpu.py). The chain starts, as sec. 6.1, at beta = 0 and lambda = nu = tau = xi = 1.

An intercept (or any coefficient not shrunk) has a fixed N(0, s^2) prior: precision 1/s^2 in
Sigma^-1 and prior variance s^2 in the p > N draw. ``prior="flat"`` drops every prior term
(Sigma = (X'X)^-1): the plain Albert-Chib sampler, whose posterior mode is the probit MLE.
"""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import rng as streams
from .expansion import expansion_scale
from .gaussian_draw import PrecisionDraw, bcm_draw
from .latent_pass import latent_pass

PRIORS = ("horseshoe", "flat")
ROUTES = ("auto", "cholesky", "bcm")
PRECISIONS = ("float64", "float32")


@dataclass
class GibbsState:
    """One state of the chain; the scales are kept as the reciprocals the conditionals draw."""

    beta: np.ndarray            # (p,)
    lambda_sq_inv: np.ndarray   # (p_s,) lambda_j^-2 of the shrunk coefficients
    nu_inv: np.ndarray          # (p_s,)
    tau_sq_inv: float
    xi_inv: float


class HorseshoeProbit:
    """The Gibbs sampler on one design: X'X formed once, then ``step`` per iteration.

    Parameters
    ----------
    X : ndarray of float64, shape (N, p)
    y : ndarray of 0/1, shape (N,)
    shrunk : ndarray of bool, shape (p,)
        Coefficients under the horseshoe; the others get a N(0, fixed_sd^2) prior.
    fixed_sd : float
        Prior sd of the coefficients not shrunk (the intercept).
    prior : "horseshoe" | "flat"
    route : "auto" (BCM when p > N) | "cholesky" | "bcm": how beta | z is drawn (same law).
    precision : "float64" | "float32": of X and the Cholesky route's linear algebra.
    threads : 1 | 2: with 2, the Cholesky factor of step (ii)'s precision, which needs only
        lambda and tau, is computed in a second thread while z and X'z are (same draws).
    expansion : rescale z by the marginal augmentation's g before the beta draw (N >= 2).
    """

    def __init__(self, X, y, shrunk, fixed_sd=10.0, prior="horseshoe", route="auto",
                 precision="float64", threads=1, expansion=True):
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        if route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.dtype = np.dtype(precision)
        self.X = np.ascontiguousarray(X, dtype=self.dtype)
        self.sign = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
        self.shrunk = np.asarray(shrunk, dtype=bool)
        if prior == "horseshoe" and not self.shrunk.any():
            raise ValueError("the horseshoe needs at least one shrunk coefficient (the gamma "
                             "draw of tau^-2 has shape (p_s + 1) / 2 >= 1).")
        self.fixed_precision = 1.0 / fixed_sd**2
        self.prior = prior
        n, p = self.X.shape
        self.wide = p > n if route == "auto" else route == "bcm"
        if self.wide and precision != "float64":
            raise ValueError("the p > N (BCM) route runs in float64 only.")
        if prior == "flat" and (p > n or self.wide):
            raise ValueError(f"a flat prior needs p <= N and the Cholesky route (here p = {p}, "
                             f"N = {n}): X'X is singular or the prior variance infinite.")
        self.precision_draw = None if self.wide else PrecisionDraw(self.X)
        self.threads = threads
        self.expansion = expansion and n >= 2
        self._Xtz = np.empty(p)

    @cached_property
    def _pool(self):
        """The second thread (threads=2) that factorises the precision beside the z step."""
        return ThreadPoolExecutor(1, thread_name_prefix="survscan-cholesky")

    def initial_state(self):
        """beta = 0 and lambda = nu = tau = xi = 1 (sec. 6.1)."""
        p_s = int(self.shrunk.sum())
        return GibbsState(beta=np.zeros(self.X.shape[1]), lambda_sq_inv=np.ones(p_s),
                          nu_inv=np.ones(p_s), tau_sq_inv=1.0, xi_inv=1.0)

    def prior_precision(self, state):
        """Diagonal of Sigma^-1 - X'X: tau^-2 lambda_j^-2 for shrunk coefficients; shape (p,)."""
        d = np.full(self.X.shape[1], 0.0 if self.prior == "flat" else self.fixed_precision)
        if self.prior == "horseshoe":
            d[self.shrunk] = state.tau_sq_inv * state.lambda_sq_inv
        return d

    def step(self, state, chain_streams, iteration):
        """One Gibbs iteration from ``state`` with the Philox streams of one chain
        (rng.ChainStreams); returns (new state, z), z the draw of z | beta (before the
        expansion rescales it)."""
        def rng(step):
            return chain_streams.at(iteration, step)

        # lambda^-2 | beta, nu, tau, then tau^-2 | beta, lambda, xi (step i: given beta, z and
        # lambda are independent, so z may come after them)
        if self.prior == "flat":
            lambda_sq_inv, tau_sq_inv = state.lambda_sq_inv, state.tau_sq_inv
        else:
            b2 = state.beta[self.shrunk] ** 2
            lambda_sq_inv = rng(streams.STEP_LAMBDA).exponential(
                state.nu_inv + 0.5 * state.tau_sq_inv * b2)
            tau_sq_inv = rng(streams.STEP_TAU).gamma(
                0.5 * (b2.size + 1), state.xi_inv + 0.5 * lambda_sq_inv @ b2)
        draft = GibbsState(state.beta, lambda_sq_inv, state.nu_inv, tau_sq_inv, state.xi_inv)
        factored = None
        if not self.wide and self.threads > 1:       # step (ii)'s Cholesky beside step (i)'s z
            factored = self._pool.submit(self.precision_draw.factor,
                                         self.prior_precision(draft))
        # z | beta, and X'z, in one pass over X
        z = np.empty(self.X.shape[0])
        zz = latent_pass(self.X, state.beta, self.sign, rng(streams.STEP_Z), z, self._Xtz)
        # (ii) beta | g z, lambda, tau;  nu^-1 | lambda;  xi^-1 | tau
        beta = self.draw_beta(z, zz, self._Xtz, draft, rng(streams.STEP_BETA),
                              rng(streams.STEP_EXPAND), factored)
        nu_inv, xi_inv = state.nu_inv, state.xi_inv
        if self.prior == "horseshoe":
            nu_inv = rng(streams.STEP_NU).exponential(1.0 + lambda_sq_inv)
            xi_inv = rng(streams.STEP_XI).exponential(np.array([1.0 + tau_sq_inv]))[0]
        return GibbsState(beta, lambda_sq_inv, nu_inv, tau_sq_inv, xi_inv), z

    def draw_beta(self, z, zz, Xtz, state, rng, rng_expand, factored=None):
        """beta | g z, lambda, tau (gaussian_draw), g the marginal augmentation's scale (1
        without expansion): the Cholesky route (its factor already under way in the second
        thread when ``factored`` is its future), or BCM for p > N. zz = z'z, Xtz = X'z."""
        n, p = self.X.shape
        if not self.wide:
            if factored is None:
                self.precision_draw.factor(self.prior_precision(state))
            else:
                factored.result()
            half = self.precision_draw.whiten(Xtz)
            g = 1.0
            if self.expansion:
                half64 = half.astype(np.float64, copy=False)
                g = expansion_scale(n, zz - half64 @ half64, rng_expand)
            return self.precision_draw.back(g * half + rng.standard_normal(p))
        variance = 1.0 / self.prior_precision(state)
        normals = rng.standard_normal(p + n)
        expand = (lambda q: expansion_scale(n, q, rng_expand)) if self.expansion else None
        return bcm_draw(self.X, z, variance, normals[:p], normals[p:], expand)[0]

    def shrinkage(self, state, column_variance):
        """Shrinkage factors kappa_j = 1 / (1 + N s_j^2 tau^2 lambda_j^2) of the shrunk
        coefficients (Piironen & Vehtari 2017, with the probit's unit latent variance); 0 = no
        shrinkage, 1 = shrunk to 0. ``column_variance``: s_j^2 of the shrunk columns."""
        n = self.X.shape[0]
        return 1.0 / (1.0 + n * column_variance / (state.tau_sq_inv * state.lambda_sq_inv))
