"""The Metropolis-Hastings move of tau with beta integrated out (global_scale.py,
HorseshoeProbit(tau_step="marginal")): its target from the p x p Cholesky (Woodbury, matrix
determinant lemma) against the dense N x N Gaussian log-density of scipy; the move leaves the
exact one-dimensional law of log tau | z, lambda invariant (exact draws by numerical inversion,
one move each, Kolmogorov-Smirnov); the chain samples the posterior of the paper's scheme."""
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from engine.bayes import global_scale
from engine.bayes.chain import run_chain
from engine.bayes.gaussian_draw import PrecisionDraw
from engine.bayes.horseshoe_probit import HorseshoeProbit

with warnings.catch_warnings():    # ArviZ 0.x warns once a day about its coming 1.0 refactor
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

P_MIN = 1e-3


def _problem(seed=0, n=7, p=3):
    """X, z, lambda^-2 of the shrunk coefficients 1..p-1 and coefficient 0's fixed variance."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    z = rng.normal(size=n) * 2.0
    return X, z, rng.uniform(0.3, 4.0, size=p - 1), 9.0


def _variances(t, lambda_sq_inv, fixed_variance):
    return np.r_[fixed_variance, math.exp(2.0 * t) / lambda_sq_inv]


def _log_target(draw, X, z, t, lambda_sq_inv, fixed_variance):
    """global_scale's log pi(t) from the p x p factor of Q = X'X + D^-1."""
    draw.factor(1.0 / _variances(t, lambda_sq_inv, fixed_variance))
    return global_scale.log_target(t, lambda_sq_inv.size, draw.log_det(), z @ z,
                                   draw.whiten(X.T @ z))


def _dense_log_target(X, z, ts, lambda_sq_inv, fixed_variance):
    """log N(z; 0, I + X D X') (N x N: slogdet and solve, batched over ts) + log of tau's
    half-Cauchy density in t, at each t of ``ts``."""
    ts = np.atleast_1d(ts)
    D = np.stack([_variances(t, lambda_sq_inv, fixed_variance) for t in ts])
    sigma = np.eye(z.size) + np.einsum("ij,tj,kj->tik", X, D, X)
    log_det = np.linalg.slogdet(sigma)[1]
    solved = np.linalg.solve(sigma, np.tile(z, (ts.size, 1))[..., None])[..., 0]
    quad = solved @ z
    normal = -0.5 * (z.size * math.log(2 * math.pi) + log_det + quad)
    return normal + ts + stats.halfcauchy.logpdf(np.exp(ts))


def test_woodbury_log_density_is_the_dense_gaussian():
    X, z, lam, fixed = _problem()
    draw = PrecisionDraw(X)
    for t in (-2.0, -0.3, 0.0, 0.8):
        D = _variances(t, lam, fixed)
        draw.factor(1.0 / D)
        dense = stats.multivariate_normal(np.zeros(7), np.eye(7) + X @ np.diag(D) @ X.T)
        got = global_scale.log_density(draw.log_det(), np.log(D).sum(), z @ z,
                                       draw.whiten(X.T @ z)) - 3.5 * math.log(2 * math.pi)
        assert got == pytest.approx(dense.logpdf(z), rel=1e-12)
    # the target up to one constant (lambda's part of log det D, the normalisations)
    ts = np.array([-2.0, -0.3, 0.0, 0.8])
    gaps = [_log_target(draw, X, z, t, lam, fixed) for t in ts] - _dense_log_target(
        X, z, ts, lam, fixed)
    np.testing.assert_allclose(gaps, gaps[0], rtol=0, atol=1e-10)


def test_move_leaves_the_exact_law_of_log_tau_invariant():
    """t drawn exactly from pi(t | z, lambda) (dense density on a grid, inverted), one move
    each from its own stream: the moved t must follow the same law; the move moves."""
    X, z, lam, fixed = _problem(seed=1)
    grid = np.linspace(-40.0, 9.0, 20001)
    log_pi = _dense_log_target(X, z, grid, lam, fixed)
    cdf = integrate.cumulative_trapezoid(np.exp(log_pi - log_pi.max()), grid, initial=0.0)
    cdf /= cdf[-1]
    assert np.exp(log_pi[[0, -1]] - log_pi.max()).max() < 1e-9          # the grid holds pi
    start = np.interp(np.random.default_rng(2).random(6000), cdf, grid)
    draw, key = PrecisionDraw(X), np.array([3, 0], dtype=np.uint64)
    moved, accepted = np.empty_like(start), 0
    for k, t in enumerate(start):
        t_new, u = global_scale.proposal(key, k, t, lam.size)
        ratio = (_log_target(draw, X, z, t_new, lam, fixed)
                 - _log_target(draw, X, z, t, lam, fixed))
        take = global_scale.accept(u, ratio)
        moved[k], accepted = (t_new, accepted + 1) if take else (t, accepted)
    assert 0.2 < accepted / start.size < 0.95
    exact_cdf = lambda x: np.interp(x, grid, cdf)                       # noqa: E731
    assert stats.kstest(moved, exact_cdf).pvalue > P_MIN
    assert stats.kstest(start, exact_cdf).pvalue > P_MIN                 # the check itself


def test_marginal_scheme_samples_the_posterior_of_the_paper_scheme():
    """Both schemes on one small problem: posterior means of the coefficients and of log tau
    within 4 combined Monte Carlo standard errors; the marginal scheme's tau moves (accepted
    moves change tau after the Gibbs draw)."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 6))
    y = (X[:, 0] - 0.7 * X[:, 1] + rng.normal(size=120) > 0).astype(float)
    stats_ = []
    for scheme, seed in (("gibbs", 1), ("marginal", 2)):
        gibbs = HorseshoeProbit(X, y, np.ones(6, bool), tau_step=scheme)
        runs = [run_chain(gibbs, c, seed, 3000, 300, 1, X.var(0)) for c in range(2)]
        draws = np.concatenate([np.stack([r["beta"] for r in runs]),
                                np.log(np.stack([r["tau"] for r in runs]))[..., None]], axis=2)
        stats_.append((draws.mean((0, 1)), az.mcse(az.convert_to_dataset(draws))["x"].values))
    (m0, s0), (m1, s1) = stats_
    assert np.all(np.abs(m0 - m1) < 4 * np.hypot(s0, s1))


def test_marginal_scheme_needs_the_cholesky_route_and_the_horseshoe():
    X, y = np.random.default_rng(0).normal(size=(5, 8)), np.array([1, 0, 1, 1, 0])
    with pytest.raises(ValueError, match="Cholesky route"):
        HorseshoeProbit(X, y, np.ones(8, bool), tau_step="marginal")
    with pytest.raises(ValueError, match="tau_step"):
        HorseshoeProbit(X[:, :2], y, np.ones(2, bool), tau_step="slice")
