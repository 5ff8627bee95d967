"""Each conditional sampler of the horseshoe probit Gibbs sampler against its exact
distribution (scipy.stats), and the whole sampler by Geweke's (2004) "getting it right" test.

Kolmogorov-Smirnov tests with fixed seeds: the p-values are deterministic; a wrong
parameterisation (rate for scale, a missing 1/2) gives p < 1e-10 at these sample sizes.
"""
import warnings

import numpy as np
import pytest
from scipy import stats

from engine.bayes import philox, rng as streams
from engine.bayes.gaussian_draw import PrecisionDraw, bcm_draw
from engine.bayes.horseshoe_probit import GibbsState, HorseshoeProbit
from engine.bayes.truncated_normal import THRESHOLD, draw_latent, draw_positive

P_MIN = 1e-3


@pytest.mark.parametrize("mu_star", [-4.0, -1.0, -0.2, 0.0, THRESHOLD - 1e-9, THRESHOLD,
                                     THRESHOLD + 0.01, 1.0, 3.0])
def test_truncated_normal_matches_scipy_on_both_branches(mu_star):
    z = draw_positive(np.full(20000, mu_star), streams.stream(7, 0, 0, 0))
    assert z.min() > 0
    reference = stats.truncnorm(a=-mu_star, b=np.inf, loc=mu_star, scale=1.0)
    assert stats.kstest(z, reference.cdf).pvalue > P_MIN


def test_latent_z_truncated_by_outcome():
    """y = 0 rows are truncated to R-, y = 1 rows to R+, each with its own mean."""
    mu = np.tile([-1.5, 0.3, 2.0], 8000)
    sign = np.repeat([1.0, -1.0], mu.size // 2)
    z = draw_latent(mu, sign, streams.stream(3, 1, 2, 0))
    assert np.all(np.sign(z) == sign)
    for s in (1.0, -1.0):
        for m in (-1.5, 0.3, 2.0):
            pick = (sign == s) & (mu == m)
            lo, hi = (0.0, np.inf) if s > 0 else (-np.inf, 0.0)
            ref = stats.truncnorm(a=lo - m, b=hi - m, loc=m)
            assert stats.kstest(z[pick], ref.cdf).pvalue > P_MIN


def test_philox_block_is_numpys_philox4x64_10():
    """philox.philox is NumPy's Philox bijection (NumPy increments its counter before the
    first block, hence c0 + 1)."""
    key = np.array([2**64 - 5, 7], dtype=np.uint64)
    for counter in ([5, 9, 3, 2], [2**64 - 2, 0, 2**40, 1], [0, 123456, 9999, 5]):
        raw = np.random.Philox(key=key, counter=np.array(counter, np.uint64)).random_raw(4)
        c = np.array(counter, np.uint64)
        c[0] += np.uint64(1)
        mine = philox.philox(key[0], key[1], *c)
        np.testing.assert_array_equal(np.array(mine, dtype=np.uint64), raw)
    unit = np.random.Generator(np.random.Philox(key=key, counter=[4, 9, 3, 2])).random(4)
    np.testing.assert_array_equal(philox.uniforms4(key, 5, 9, 3, 2), unit)


def test_philox_streams_are_keyed_by_seed_chain_iteration_step():
    a = streams.stream(1, 0, 5, 2).standard_normal(6)
    np.testing.assert_array_equal(a, streams.ChainStreams(1, 0).at(5, 2).standard_normal(6))
    np.testing.assert_array_equal(a[:3], streams.stream(1, 0, 5, 2).standard_normal(3))
    for other in [(2, 0, 5, 2), (1, 1, 5, 2), (1, 0, 6, 2), (1, 0, 5, 3)]:
        assert not np.allclose(a, streams.stream(*other).standard_normal(6))


def test_normal_exponential_and_gamma_draws_match_scipy():
    s = streams.stream(3, 0, 1, 0)
    assert stats.kstest(s.standard_normal(20000), "norm").pvalue > P_MIN
    rate = np.repeat([0.2, 1.0, 7.5], 8000)
    e = s.exponential(rate)
    for r in (0.2, 1.0, 7.5):
        assert stats.kstest(e[rate == r], stats.expon(scale=1 / r).cdf).pvalue > P_MIN
    for shape, rate in ((1.0, 1.0), (1.5, 0.3), (50.5, 20.0)):
        g = np.array([streams.stream(4, 0, it, 2).gamma(shape, rate) for it in range(4000)])
        assert stats.kstest(g, stats.gamma(shape, scale=1 / rate).cdf).pvalue > P_MIN


def _exact_gaussian(X, z, d):
    Q = X.T @ X + np.diag(d)
    cov = np.linalg.inv(Q)
    return cov @ X.T @ z, cov


def _whitened_ks(draws, mean, cov):
    """KS p-values of the whitened draws against N(0, 1), one per coordinate."""
    L = np.linalg.cholesky(cov)
    w = np.linalg.solve(L, (draws - mean).T).T
    return [stats.kstest(w[:, j], "norm").pvalue for j in range(w.shape[1])]


def test_precision_draw_is_exact_gaussian():
    rng = np.random.default_rng(0)
    X, z = rng.normal(size=(12, 4)), rng.normal(size=12)
    d = np.array([0.01, 2.0, 30.0, 0.5])
    draw = PrecisionDraw(X)
    s = rng.standard_normal((8000, 4))
    draws = np.array([draw(X.T @ z, d, s[k]) for k in range(len(s))])
    mean, cov = _exact_gaussian(X, z, d)
    assert min(_whitened_ks(draws, mean, cov)) > P_MIN
    np.testing.assert_allclose(draws.mean(0), mean, atol=4 * np.sqrt(np.diag(cov) / 8000).max())


def test_bcm_draw_for_p_above_n_is_exact_gaussian():
    rng = np.random.default_rng(1)
    X, z = rng.normal(size=(4, 7)), rng.normal(size=4)
    variance = np.array([0.3, 2.0, 0.05, 1.0, 4.0, 0.7, 1.5])
    draws = np.array([bcm_draw(X, z, variance, rng.standard_normal(7),
                               rng.standard_normal(4))[0] for _ in range(8000)])
    mean, cov = _exact_gaussian(X, z, 1.0 / variance)
    assert min(_whitened_ks(draws, mean, cov)) > P_MIN


def _tiny(seed=0, n=8, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (rng.random(n) < 0.5).astype(float)
    y[:2] = [0, 1]
    return X, y


def test_scale_conditionals_match_their_exact_distributions():
    """From one fixed state, many iterations' draws of lambda^-2, tau^-2, nu^-1, xi^-1 and z,
    each transformed by its exact conditional CDF (given the values it was drawn from), are
    uniform: the Makalic-Schmidt exponential/gamma conditionals as written in the docstring."""
    X, y = _tiny()
    gibbs = HorseshoeProbit(X, y, shrunk=np.array([False, True, True]), fixed_sd=3.0,
                            expansion=False)      # beta given z itself (expansion: its own test)
    state = GibbsState(beta=np.array([0.4, -1.2, 0.05]), lambda_sq_inv=np.array([0.7, 5.0]),
                       nu_inv=np.array([1.3, 0.2]), tau_sq_inv=2.5, xi_inv=0.8)
    b2 = state.beta[1:] ** 2
    pit = {"lambda": [], "tau": [], "nu": [], "xi": [], "z": [], "beta": []}
    chain_streams = streams.ChainStreams(11, 0)
    mu = X @ state.beta
    for it in range(3000):
        new, z = gibbs.step(state, chain_streams, it)
        rate = state.nu_inv + 0.5 * state.tau_sq_inv * b2
        pit["lambda"] += list(stats.expon.cdf(new.lambda_sq_inv * rate))
        tau_rate = state.xi_inv + 0.5 * new.lambda_sq_inv @ b2
        pit["tau"].append(stats.gamma.cdf(new.tau_sq_inv * tau_rate, a=(2 + 1) / 2))
        pit["nu"] += list(stats.expon.cdf(new.nu_inv * (1.0 + new.lambda_sq_inv)))
        pit["xi"].append(stats.expon.cdf(new.xi_inv * (1.0 + new.tau_sq_inv)))
        lo = np.where(y > 0, -mu, -np.inf)
        hi = np.where(y > 0, np.inf, -mu)
        pit["z"] += list(stats.truncnorm.cdf(z - mu, lo, hi))
        d = np.r_[1 / 9.0, new.tau_sq_inv * new.lambda_sq_inv]
        mean, cov = _exact_gaussian(X, z, d)
        w = np.linalg.solve(np.linalg.cholesky(cov), new.beta - mean)
        pit["beta"] += list(stats.norm.cdf(w))
    for name, u in pit.items():
        assert stats.kstest(u, "uniform").pvalue > P_MIN, name


def _prior_draws(rng, size, p):
    """(beta, tau, lambda) straight from the horseshoe prior."""
    tau = np.abs(rng.standard_cauchy(size))
    lam = np.abs(rng.standard_cauchy((size, p)))
    beta = rng.normal(size=(size, p)) * lam * tau[:, None]
    return beta, tau, lam


def _functions(beta, tau, lam):
    """Bounded test functions of the parameters (the horseshoe has no moments)."""
    return {"|beta1|<0.5": np.abs(beta[:, 0]) < 0.5, "beta2>1": beta[:, 1] > 1.0,
            "tau<1": tau < 1.0, "tau<0.2": tau < 0.2, "lambda1<1": lam[:, 0] < 1.0,
            "atan|beta1*beta2|": np.arctan(np.abs(beta[:, 0] * beta[:, 1]))}


@pytest.mark.slow
@pytest.mark.parametrize("tau_step", ["gibbs", "marginal"])
def test_geweke_getting_it_right(tau_step):
    """Geweke (2004): alternate one Gibbs iteration given y with a fresh y ~ p(y | beta). The
    parameters' stationary law is then the prior; compare bounded functions with iid prior
    draws, each within 4.5 Monte Carlo standard errors (ESS from ArviZ). Both schemes: the
    paper's, and tau moved with beta integrated out (global_scale)."""
    with warnings.catch_warnings():    # ArviZ 0.x warns once a day about its 1.0 refactor
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    rng = np.random.default_rng(2)
    n, p, m = 4, 2, 30000
    X = rng.normal(size=(n, p))
    y = (rng.random(n) < 0.5).astype(float)
    gibbs = HorseshoeProbit(X, y, shrunk=np.ones(p, bool), tau_step=tau_step)
    state = gibbs.initial_state()
    chain_streams = streams.ChainStreams(5, 0)
    kept = np.empty((m, 2 * p + 1))
    for it in range(m):
        state, _ = gibbs.step(state, chain_streams, it)
        gibbs.sign = np.where(rng.random(n) < stats.norm.cdf(X @ state.beta), 1.0, -1.0)
        kept[it] = np.r_[state.beta, state.tau_sq_inv ** -0.5, state.lambda_sq_inv ** -0.5]
    chain = _functions(kept[:, :p], kept[:, p], kept[:, p + 1:])
    prior = _functions(*_prior_draws(np.random.default_rng(3), 400000, p))
    for name, values in chain.items():
        values = values.astype(float)
        mcse = values.std() / np.sqrt(az.ess(values[None, :]))
        expected = prior[name].mean()
        assert abs(values.mean() - expected) < 4.5 * np.hypot(mcse, 1e-3), name
