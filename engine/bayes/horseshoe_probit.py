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
(ii) beta, nu^-1 and xi^-1 (in parallel). The scales are drawn in one compiled call first
(scale_draws; nu^-1 and xi^-1 need neither z nor beta). The Cholesky factor of (ii)'s
precision needs only lambda and tau, so with ``threads=2`` a second thread computes it and z and
X'z of the last rows (one pass over X, latent_pass) while the first thread passes over the
first rows; the split balances the two (``split_rows``) and does not depend on ``threads``, so
the chain is the same with one thread or two. With ``expansion`` (the default) z is rescaled to
g z just before the beta draw, g the marginal augmentation's scale (expansion.py): the same
posterior, better mixing of large coefficients, at the cost of one gamma draw.
``tau_step="marginal"`` adds a Metropolis-Hastings move of tau with beta integrated out
(Johndrow, Orenstein & Bhattacharya 2020, sec. 2; global_scale.py) before the beta draw. It
is an option, not the default: it costs a second Cholesky per iteration, and at the paper's
design (N = 10^4, p = 100, 5,000 iterations) it moved the median ESS of the coefficients from
538 to 558 and tau's from 80 to 92, within one chain's noise; with lambda and tau held fixed
the median is only 672: the z-beta augmentation, not tau, bounds the nulls there (``python -m
bench.bayes schemes``). The GPU backend runs the paper's scheme only.
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

from . import global_scale
from . import rng as streams
from .expansion import expansion_scale
from .gaussian_draw import PrecisionDraw, bcm_draw
from .latent_pass import latent_pass
from .philox import exponentials
from .scale_draws import draw_scales

PRIORS = ("horseshoe", "flat")
ROUTES = ("auto", "cholesky", "bcm")
PRECISIONS = ("float64", "float32")
TAU_STEPS = ("gibbs", "marginal")
CHOLESKY_FLOPS_PER_S = 3.5e10  # LAPACK potrf on one core of the 2-core EPYC (p = 1,000: 9.5 ms)
ROW_SECONDS = (5e-8, 4.2e-10)  # one row of the pass: its draw, and per column (p = 100: 72 ns)


def split_rows(n, p, factors=1):
    """Rows 0..k of the pass the first thread takes, the second thread taking the ``factors``
    Cholesky factorisations (p^3 / 3 flops each) and rows k..N, so that both finish together by
    the costs measured here (bench.bayes profile); k = N when the factorisations alone take
    longer than the whole pass."""
    factor = factors * p**3 / 3 / CHOLESKY_FLOPS_PER_S
    row = ROW_SECONDS[0] + ROW_SECONDS[1] * p
    return min(n, (n + int(factor / row)) // 2)


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
    threads : 1 | 2: with 2, a second thread computes the Cholesky factor of step (ii)'s
        precision (it needs only lambda and tau) and z and X'z of the last rows while the first
        thread passes over the first rows (same draws, same sums).
    expansion : rescale z by the marginal augmentation's g before the beta draw (N >= 2).
    tau_step : "gibbs" (the paper's tau^-2 | beta draw alone) | "marginal": then also tau by
        Metropolis-Hastings with beta integrated out (global_scale.py; the horseshoe on the
        Cholesky route; a second Cholesky per iteration).
    """

    def __init__(self, X, y, shrunk, fixed_sd=10.0, prior="horseshoe", route="auto",
                 precision="float64", threads=1, expansion=True, tau_step="gibbs"):
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        if route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if tau_step not in TAU_STEPS:
            raise ValueError(f"tau_step must be one of {TAU_STEPS}, got {tau_step!r}")
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
        self.marginal_tau = tau_step == "marginal"
        if self.marginal_tau and (self.wide or prior != "horseshoe"):
            raise ValueError("tau_step='marginal' needs the horseshoe prior and the Cholesky "
                             "route (p <= N).")
        self._proposal_draw = self.precision_draw.twin() if self.marginal_tau else None
        self.split = split_rows(n, p, 0 if self.wide else 1 + self.marginal_tau)
        self._Xtz = np.empty(p), np.empty(p)
        self._shrunk_index = np.flatnonzero(self.shrunk)
        self._fixed = np.where(self.shrunk | (prior == "flat"), 0.0, self.fixed_precision)

    @cached_property
    def _pool(self):
        """The second thread (threads=2): the Cholesky and the last rows of the z step."""
        return ThreadPoolExecutor(1, thread_name_prefix="survscan-cholesky")

    def initial_state(self):
        """beta = 0 and lambda = nu = tau = xi = 1 (sec. 6.1)."""
        p_s = int(self.shrunk.sum())
        return GibbsState(beta=np.zeros(self.X.shape[1]), lambda_sq_inv=np.ones(p_s),
                          nu_inv=np.ones(p_s), tau_sq_inv=1.0, xi_inv=1.0)

    def prior_precision(self, state):
        """Diagonal of Sigma^-1 - X'X: tau^-2 lambda_j^-2 for shrunk coefficients; shape (p,)."""
        d = self._fixed.copy()
        if self.prior == "horseshoe":
            d[self._shrunk_index] = state.tau_sq_inv * state.lambda_sq_inv
        return d

    def step(self, state, chain_streams, iteration):
        """One Gibbs iteration from ``state`` with the Philox streams of one chain
        (rng.ChainStreams); returns (new state, z), z the draw of z | beta (before the
        expansion rescales it)."""
        # lambda^-2 | beta, nu, tau, then tau^-2 | beta, lambda, xi (step i: given beta, z and
        # lambda are independent, so z may come after them); nu^-1 | lambda and xi^-1 | tau
        draft = state
        if self.prior == "horseshoe":
            draft = GibbsState(state.beta, *draw_scales(
                chain_streams.key, iteration, state.beta[self._shrunk_index] ** 2,
                state.nu_inv, state.tau_sq_inv, state.xi_inv))
        # z | beta and X'z in one pass over X, in two shares of rows; the second share after
        # step (ii)'s Cholesky, in the second thread when there is one
        z = np.empty(self.X.shape[0])
        stream = chain_streams.at(iteration, streams.STEP_Z)
        first, second = self._Xtz
        if self.marginal_tau:       # the move's proposal needs only tau: factorised with draft's
            t = -0.5 * np.log(draft.tau_sq_inv)
            t_new, u = global_scale.proposal(chain_streams.key, iteration, t,
                                             self._shrunk_index.size)
            moved = GibbsState(state.beta, draft.lambda_sq_inv, draft.nu_inv,
                               float(np.exp(-2.0 * t_new)), draft.xi_inv)

        def last_rows():
            if not self.wide:
                self.precision_draw.factor(self.prior_precision(draft))
            if self.marginal_tau:
                self._proposal_draw.factor(self.prior_precision(moved))
            return latent_pass(self.X, state.beta, self.sign, stream, z, second,
                               (self.split, z.size))

        later = self._pool.submit(last_rows) if self.threads > 1 else None
        zz = latent_pass(self.X, state.beta, self.sign, stream, z, first, (0, self.split))
        zz += later.result() if later is not None else last_rows()
        first += second
        if self.marginal_tau:
            draft = self.move_tau(draft, moved, t, t_new, u, zz, first, chain_streams.key,
                                  iteration)
        # (ii) beta | g z, lambda, tau
        beta = self.draw_beta(z, zz, first, draft, chain_streams.at(iteration, streams.STEP_BETA),
                              chain_streams.at(iteration, streams.STEP_EXPAND))
        return GibbsState(beta, draft.lambda_sq_inv, draft.nu_inv, draft.tau_sq_inv,
                          draft.xi_inv), z

    def move_tau(self, draft, moved, t, t_new, u, zz, Xtz, key, iteration):
        """global_scale's move from ``draft`` (t = log tau) to ``moved`` (t_new), both factors
        computed; on acceptance the proposal's factor serves the beta draw and xi^-1 | tau is
        drawn anew from its stream (on rejection that draw is draft's)."""
        p_s = self._shrunk_index.size
        current, proposed = (
            global_scale.log_target(at, p_s, draw.log_det(), zz,
                                    draw.whiten(Xtz).astype(np.float64))
            for at, draw in ((t, self.precision_draw), (t_new, self._proposal_draw)))
        if not global_scale.accept(u, proposed - current):
            return draft
        self.precision_draw, self._proposal_draw = self._proposal_draw, self.precision_draw
        xi_inv = exponentials(key, iteration, streams.STEP_XI,
                              np.array([1.0 + moved.tau_sq_inv]))[0]
        return GibbsState(draft.beta, draft.lambda_sq_inv, draft.nu_inv, moved.tau_sq_inv,
                          xi_inv)

    def draw_beta(self, z, zz, Xtz, state, rng, rng_expand):
        """beta | g z, lambda, tau (gaussian_draw), g the marginal augmentation's scale (1
        without expansion): the Cholesky route (its factor already computed by ``step``), or
        BCM for p > N. zz = z'z, Xtz = X'z."""
        n, p = self.X.shape
        if not self.wide:
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
