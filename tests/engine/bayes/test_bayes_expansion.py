"""The one-pass z step (latent_pass.py) and the marginal augmentation (expansion.py) of the
horseshoe probit sampler, against brute-force definitions written here: X beta, X'z and z'z
by NumPy; z'(I + X D X')^-1 z by a dense solve; pi(z | D) by rejection from the untruncated
Gaussian; beta | g z by the exact Gaussian conditional."""
import numpy as np
import pytest
from scipy import stats

from engine.bayes import rng as streams
from engine.bayes.expansion import expansion_scale
from engine.bayes.gaussian_draw import PrecisionDraw, bcm_draw
from engine.bayes.horseshoe_probit import GibbsState, HorseshoeProbit
from engine.bayes.latent_pass import latent_pass
from engine.bayes.truncated_normal import draw_latent

P_MIN = 1e-3


@pytest.mark.parametrize("n", [37, 1000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_latent_pass_is_the_z_step_then_x_transpose_z(n, dtype):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 23)).astype(dtype)
    beta = rng.normal(size=23)
    sign = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    stream = streams.stream(9, 1, 4, streams.STEP_Z)
    z, Xtz = np.empty(n), np.full(23, np.nan)
    zz = latent_pass(X, beta, sign, stream, z, Xtz)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(z, draw_latent(X64 @ beta, sign, stream), rtol=1e-12)
    np.testing.assert_allclose(Xtz, X64.T @ z, rtol=1e-12, atol=1e-12)
    assert zz == pytest.approx(z @ z, rel=1e-12)
    shares, parts = np.empty(n), [np.empty(23), np.empty(23)]          # two threads' shares
    zz_parts = [latent_pass(X, beta, sign, stream, shares, parts[k], rows)
                for k, rows in enumerate([(0, n // 3), (n // 3, n)])]
    np.testing.assert_array_equal(shares, z)
    np.testing.assert_allclose(parts[0] + parts[1], X64.T @ z, rtol=1e-12, atol=1e-12)
    assert sum(zz_parts) == pytest.approx(z @ z, rel=1e-12)


def _problem(n=3, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    variance = rng.uniform(0.3, 3.0, size=p)                  # D, the prior variances
    return X, variance, np.eye(n) + X @ np.diag(variance) @ X.T


def test_quadratic_form_from_either_route_is_the_brute_force_one():
    X, variance, Sigma = _problem(6, 4)
    z = np.random.default_rng(1).normal(size=6)
    exact = z @ np.linalg.solve(Sigma, z)
    draw = PrecisionDraw(X)
    draw.factor(1.0 / variance)
    half = draw.whiten(X.T @ z)
    assert z @ z - half @ half == pytest.approx(exact, rel=1e-10)
    seen = []
    bcm_draw(X, z, variance, np.zeros(4), np.zeros(6), lambda q: seen.append(q) or 1.0)
    assert seen == [pytest.approx(exact, rel=1e-10)]


def test_expansion_leaves_the_marginal_law_of_z_invariant():
    """z ~ pi(z | D), N(0, I + X D X') truncated to an orthant (exact, by rejection); after
    the move z -> g z the law must be the same: two-sample KS against fresh exact draws, per
    coordinate and for z'Sigma^-1 z (a wrong gamma rate or shape scales z and fails)."""
    X, variance, Sigma = _problem()
    sign = np.array([1.0, -1.0, 1.0])
    rng = np.random.default_rng(5)

    def exact(m):
        z = rng.multivariate_normal(np.zeros(3), Sigma, size=8 * m)
        return z[np.all(np.sign(z) == sign, axis=1)][:m]

    start, fresh = exact(20000), exact(20000)
    quad = np.einsum("ij,ij->i", start, np.linalg.solve(Sigma, start.T).T)
    g = np.array([expansion_scale(3, q, streams.stream(2, 0, k, streams.STEP_EXPAND))
                  for k, q in enumerate(quad)])
    moved = g[:, None] * start
    assert np.all(np.sign(moved) == sign)
    assert stats.kstest(g**2 * quad / 2, stats.gamma(1.5).cdf).pvalue > P_MIN
    assert np.std(np.log(g)) > 0.2                         # the move moves
    for j in range(3):
        assert stats.ks_2samp(moved[:, j], fresh[:, j]).pvalue > P_MIN, j
    fresh_quad = np.einsum("ij,ij->i", fresh, np.linalg.solve(Sigma, fresh.T).T)
    moved_quad = g**2 * quad
    assert stats.ks_2samp(moved_quad, fresh_quad).pvalue > P_MIN


@pytest.mark.parametrize("route", ["cholesky", "bcm"])
def test_step_draws_beta_given_the_rescaled_z(route):
    """From one fixed state, beta is N(Q^-1 X' g z, Q^-1) with g = sqrt(Gamma(N/2, q/2)) read
    from the expansion's stream and q = z'(I + X D X')^-1 z by a dense solve."""
    rng = np.random.default_rng(3)
    n, p = 5, 3
    X, y = rng.normal(size=(n, p)), np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    gibbs = HorseshoeProbit(X, y, shrunk=np.array([False, True, True]), fixed_sd=3.0,
                            route=route)
    state = GibbsState(beta=np.array([0.4, -1.2, 0.05]), lambda_sq_inv=np.array([0.7, 5.0]),
                       nu_inv=np.array([1.3, 0.2]), tau_sq_inv=2.5, xi_inv=0.8)
    chain_streams = streams.ChainStreams(4, 0)
    pit_beta, pit_g = [], []
    for it in range(3000):
        new, z = gibbs.step(state, chain_streams, it)
        d = gibbs.prior_precision(new)
        q = z @ np.linalg.solve(np.eye(n) + X @ np.diag(1.0 / d) @ X.T, z)
        g = expansion_scale(n, q, chain_streams.at(it, streams.STEP_EXPAND))
        pit_g.append(stats.gamma.cdf(g**2 * q / 2, a=n / 2))
        cov = np.linalg.inv(X.T @ X + np.diag(d))
        w = np.linalg.solve(np.linalg.cholesky(cov), new.beta - cov @ X.T @ (g * z))
        pit_beta += list(stats.norm.cdf(w))
    assert stats.kstest(pit_g, "uniform").pvalue > P_MIN
    assert stats.kstest(pit_beta, "uniform").pvalue > P_MIN


def test_expansion_needs_a_positive_quadratic_form():
    with pytest.raises(FloatingPointError, match="not positive"):
        expansion_scale(10, -1e-9, streams.stream(0, 0, 0, streams.STEP_EXPAND))
