"""engine.impute(method="smcfcs"): its two draws against their definitions (the exact
conditional of a 0/1 covariate; the rejection step's accepted draws against the target density
by quadrature), and on simulated data with a covariate missing at random given the outcome:
the pooled hazard ratios of the full data, where chained equations with the outcome as
predictors bias the incomplete covariate's toward 1 (White and Royston 2009's approximation)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import engine
from engine.missing.smcfcs import acceptance, event_probability, logistic_draw, mode


def test_binary_draw_with_two_causes_multiplies_their_likelihoods():
    p1 = np.array([0.4, 0.6, 0.5])
    eta0 = np.array([[0.1, -0.3, 0.2], [0.5, 0.0, -0.4]])     # cause x row
    eta1 = eta0 + np.array([[0.7], [-0.5]])
    H0 = np.array([[0.3, 1.2, 0.05], [0.6, 0.2, 0.9]])
    died = np.array([[True, False, False], [False, False, True]])   # cause 1, none, cause 2

    def likelihood(eta):
        return np.prod(np.exp(eta) ** died * np.exp(-H0 * np.exp(eta)), axis=0)

    expected = p1 * likelihood(eta1) / (p1 * likelihood(eta1) + (1 - p1) * likelihood(eta0))
    np.testing.assert_allclose(event_probability(p1, eta0, eta1, H0, died), expected,
                               rtol=1e-12)


def test_binary_draw_is_the_exact_conditional():
    """P(x = 1 | T, D) = p1 L(1) / (p1 L(1) + (1 - p1) L(0)), L(x) = (h0 e^{eta_x})^D
    exp(-H0 e^{eta_x}) the Cox likelihood of the row (h0 cancels)."""
    p1, eta0, eta1 = np.array([0.3, 0.8]), np.array([-0.2, 0.4]), np.array([0.5, 1.1])
    H0, died = np.array([0.7, 2.0]), np.array([True, False])
    h0 = 0.37

    def likelihood(eta):
        return (h0 * np.exp(eta)) ** died * np.exp(-H0 * np.exp(eta))

    expected = p1 * likelihood(eta1) / (p1 * likelihood(eta1) + (1 - p1) * likelihood(eta0))
    np.testing.assert_allclose(event_probability(p1, eta0, eta1, H0, died), expected,
                               rtol=1e-12)


@pytest.mark.parametrize("died, H0, beta", [(True, 0.002, 0.8), (True, 3.0, 0.8),
                                            (False, 0.8, 0.8), (False, 6.0, -1.5),
                                            (True, 1.0, 0.0)])
def test_rejection_step_draws_from_the_target(died, H0, beta):
    """Draws of N(mode, sigma^2) kept with the acceptance probability follow the density
    proportional to N(x; mu, sigma^2) (e^{beta x})^D exp(-H0 e^{beta x + c}): the mode by
    its definition, and the kept draws' mean and SD against the target's by quadrature,
    within 4 Monte Carlo SEs."""
    mu, sigma, c = 0.3, 1.2, 0.4
    rng = np.random.default_rng(7)
    m = mode(np.array([mu]), sigma, beta, np.array([c]), np.array([H0]), np.array([died]))[0]
    x = rng.normal(m, sigma, 400_000)
    p = acceptance(x, m, beta, c, H0)
    assert (p <= 1).all() and (p >= 0).all() and p.mean() > 0.2
    kept = x[rng.uniform(size=x.size) < p]

    def target(v):
        return stats.norm.pdf(v, mu, sigma) * np.exp(beta * v) ** died \
            * np.exp(-H0 * np.exp(beta * v + c))

    grid = np.linspace(-15, 15, 300_001)
    assert m == pytest.approx(grid[np.argmax(target(grid))], abs=1e-4)

    mass = integrate.quad(target, -15, 15)[0]
    mean = integrate.quad(lambda v: v * target(v), -15, 15)[0] / mass
    sd = np.sqrt(integrate.quad(lambda v: (v - mean) ** 2 * target(v), -15, 15)[0] / mass)
    assert kept.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(kept.size))
    assert kept.std() == pytest.approx(sd, rel=0.02)


@pytest.fixture(scope="module")
def simulated():
    """3,000 subjects, hazard exp(0.5 x1 + 0.5 x2 + 0.7 x3); x2 (continuous) and x3 (0/1)
    missing for 40-45% and 25-30% of them, more often after an event and at high x1 (missing
    at random given the outcome and x1)."""
    rng = np.random.default_rng(0)
    n = 3000
    x1 = rng.normal(size=n)
    x2 = 0.6 * x1 + rng.normal(scale=0.8, size=n)
    x3 = (rng.uniform(size=n) < special.expit(0.5 * x1)).astype(float)
    t = rng.exponential(1 / np.exp(0.5 * x1 + 0.5 * x2 + 0.7 * x3))
    c = rng.exponential(1.5, n)
    event = (t <= c).astype(int)
    full = pd.DataFrame({"time": np.minimum(t, c), "event": event, "x1": x1, "x2": x2,
                         "x3": x3})
    gone2 = rng.uniform(size=n) < special.expit(-1.0 + x1 + 1.2 * event)
    gone3 = rng.uniform(size=n) < special.expit(-1.5 + 0.5 * x1 + 0.8 * event)
    data = full.assign(x2=full["x2"].mask(gone2), x3=full["x3"].mask(gone3))
    truth = engine.fit(engine.Cohort.from_frame(full, "time", "event", ["x1", "x2", "x3"]))
    return data, truth


def test_smcfcs_recovers_the_full_data_estimates(simulated):
    data, truth = simulated
    imp = engine.impute(data, "time", "event", m=10, seed=1)
    assert imp.model == ["x1", "x2", "x3"] and imp.spec["method"] == "smcfcs"
    assert set(np.unique(imp.imputed["x3"].to_numpy())) == {0.0, 1.0}     # logistic draws
    pooled = imp.fit()                   # the Cox model it imputed for
    assert list(pooled.coef.index) == ["x1", "x2", "x3"]
    gap = (pooled.coef - truth.coef).abs() / pooled.se
    assert (gap < 1.0).all(), gap
    mice = engine.impute(data, "time", "event", method="mice", m=10, seed=1).fit(
        covariates=["x1", "x2", "x3"])
    assert (truth.coef["x2"] - mice.coef["x2"]) / mice.se["x2"] > 2.0   # toward 1


def test_same_seed_same_draws(simulated):
    data, _ = simulated
    small = data.iloc[:400]
    a = engine.impute(small, "time", "event", m=2, iterations=2, seed=4)
    b = engine.impute(small, "time", "event", m=2, iterations=2, seed=4)
    for column in ("x2", "x3"):
        pd.testing.assert_frame_equal(a.imputed[column], b.imputed[column])


def test_a_separated_binary_column_is_named():
    x = np.linspace(-1, 1, 40)
    design = np.column_stack([np.ones(40), x])
    with pytest.raises(engine.CohortError, match="predict it perfectly"):
        logistic_draw(design, (x > 0).astype(float), np.random.default_rng(0))


def test_strata_give_each_stratum_its_baseline():
    """Two strata whose baseline hazards differ 8-fold: SMC-FCS under the stratified Cox
    model recovers the full data's stratified estimates, and the pooled fit is stratified
    as the imputation was."""
    rng = np.random.default_rng(3)
    n = 3000
    site = rng.integers(0, 2, n)
    x1 = rng.normal(size=n)
    x2 = 0.6 * x1 + rng.normal(scale=0.8, size=n)
    t = rng.exponential(1 / (np.where(site == 1, 4.0, 0.5) * np.exp(0.5 * x1 + 0.6 * x2)))
    c = rng.exponential(1.0, n)
    event = (t <= c).astype(int)
    full = pd.DataFrame({"time": np.minimum(t, c), "event": event, "x1": x1, "x2": x2,
                         "site": site})
    gone = rng.uniform(size=n) < special.expit(-1.0 + x1 + 1.2 * event)
    data = full.assign(x2=full["x2"].mask(gone))
    truth = engine.fit(engine.Cohort.from_frame(full, "time", "event", ["x1", "x2"],
                                                strata="site"))
    imp = engine.impute(data, "time", "event", m=10, seed=2, strata="site")
    assert imp.model == ["x1", "x2"] and imp.spec["strata"] == ["site"]
    pooled = imp.fit()
    assert pooled.fits[0].spec["n_strata"] == 2
    gap = (pooled.coef - truth.coef).abs() / pooled.se
    assert (gap < 1.0).all(), gap
    with pytest.raises(ValueError, match="strata= is for method='smcfcs'"):
        engine.impute(data, "time", "event", method="mice", strata="site")
    with pytest.raises(engine.CohortError, match=r"strata columns \['site'\] miss values"):
        engine.impute(data.assign(site=data["site"].mask(data.index == 3)), "time", "event",
                      strata="site")


def test_rejection_step_with_two_causes_draws_from_the_target():
    """Two cause-specific models, a row that had cause 2: the target N(x; mu, sigma^2)
    e^{beta_2 x} exp(-sum_k H0_k e^{beta_k x + c_k}), its mean and SD by quadrature."""
    mu, sigma = -0.2, 1.1
    beta, c, H0 = np.array([0.9, -0.6]), np.array([0.3, -0.1]), np.array([1.5, 0.4])
    died = np.array([False, True])
    eta, h, d = c[:, None], H0[:, None], died[:, None]
    m = mode(np.array([mu]), sigma, beta, eta, h, d)[0]
    rng = np.random.default_rng(11)
    x = rng.normal(m, sigma, 400_000)
    p = acceptance(x, m, beta, eta, h)
    assert (p <= 1).all() and p.mean() > 0.2
    kept = x[rng.uniform(size=x.size) < p]

    def target(v):
        v = np.atleast_1d(v)
        hazard = np.exp(np.outer(beta, v) + c[:, None])
        return (stats.norm.pdf(v, mu, sigma) * np.exp(beta[1] * v)
                * np.exp(-(H0[:, None] * hazard).sum(axis=0)))

    mass = integrate.quad(lambda v: target(v)[0], -15, 15)[0]
    mean = integrate.quad(lambda v: v * target(v)[0], -15, 15)[0] / mass
    sd = np.sqrt(integrate.quad(lambda v: (v - mean) ** 2 * target(v)[0], -15, 15)[0] / mass)
    assert kept.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(kept.size))
    assert kept.std() == pytest.approx(sd, rel=0.02)


def test_competing_causes_recover_each_cause_specific_model():
    """Two causes with their own hazard ratios (x2: 0.6 on cause 1, -0.4 on cause 2), x2
    missing more often after either event: SMC-FCS under both cause-specific Cox models, and
    each cause-specific fit pooled (imp.fit(cause=k)) within a pooled SE of the full data's."""
    rng = np.random.default_rng(5)
    n = 3000
    x1 = rng.normal(size=n)
    x2 = 0.5 * x1 + rng.normal(scale=0.9, size=n)
    t1 = rng.exponential(1 / (0.6 * np.exp(0.4 * x1 + 0.6 * x2)))
    t2 = rng.exponential(1 / (0.4 * np.exp(-0.3 * x1 - 0.4 * x2)))
    c = rng.exponential(2.0, n)
    time = np.minimum.reduce([t1, t2, c])
    event = np.where(time == t1, 1, np.where(time == t2, 2, 0))
    full = pd.DataFrame({"time": time, "event": event, "x1": x1, "x2": x2})
    gone = rng.uniform(size=n) < special.expit(-1.0 + 0.8 * x1 + 1.0 * (event > 0))
    data = full.assign(x2=full["x2"].mask(gone))
    imp = engine.impute(data, "time", "event", m=10, seed=6)
    for cause in (1, 2):
        truth = engine.fit(engine.Cohort.from_frame(
            full.assign(event=(full["event"] == cause).astype(int)), "time", "event",
            ["x1", "x2"]))
        pooled = imp.fit(cause=cause)
        gap = (pooled.coef - truth.coef).abs() / pooled.se
        assert (gap < 1.0).all(), (cause, gap)
