"""Empirical calibration against EmpiricalCalibration's vignettes (tests/data/
empirical_calibration/README.md) and brute-force likelihoods; negative-control outcomes fitted
by engine.fit."""
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import engine
from engine.sensitivity.calibration import error_model_loglik, null_loglik

DATA = Path(__file__).resolve().parents[2] / "data" / "empirical_calibration"


@pytest.fixture(scope="module")
def sccs():
    return pd.read_csv(DATA / "sccs.csv")


@pytest.fixture(scope="module")
def southworth():
    return pd.read_csv(DATA / "southworth_replication.csv")


def test_fit_null_and_calibrate_p_match_the_vignette(sccs):
    neg = sccs[sccs["groundTruth"] == 0]
    null = engine.fit_null(neg["logRr"], neg["seLogRr"])
    assert null.n == 45 and null.left_out == 0
    # printed to 4 digits from R's Nelder-Mead optimum, itself ~1e-4 from the maximum that
    # test_fit_null_is_the_maximum_of_the_likelihood_on_a_grid checks
    np.testing.assert_allclose([null.mean, null.sd], [0.7922, 0.2834], atol=2e-4)
    sertraline = sccs[sccs["drugName"] == "Sertraline"]
    p = engine.calibrate_p(null, sertraline["logRr"], sertraline["seLogRr"])
    np.testing.assert_allclose(p, [0.8389142], atol=2e-4)   # R's Nelder-Mead null: ~1e-4


def test_fit_null_is_the_maximum_of_the_likelihood_on_a_grid(sccs):
    neg = sccs[sccs["groundTruth"] == 0]
    y, s = neg["logRr"].to_numpy(), neg["seLogRr"].to_numpy()
    null = engine.fit_null(y, s)
    best = null_loglik(null.mean, null.sd, y, s)
    means = null.mean + np.linspace(-0.05, 0.05, 41)
    sds = null.sd + np.linspace(-0.05, 0.05, 41)
    brute = max(null_loglik(m, d, y, s) for m in means for d in sds)
    assert best >= brute - 1e-12
    # the likelihood written out: sum of log N(y; mean, sd^2 + s^2)
    direct = np.sum(-0.5 * np.log(2 * np.pi * (null.sd ** 2 + s ** 2))
                    - (y - null.mean) ** 2 / (2 * (null.sd ** 2 + s ** 2)))
    np.testing.assert_allclose(best, direct, rtol=1e-13)


def test_calibrate_p_closed_form_and_one_sided():
    null = engine.EmpiricalNull(mean=0.2, sd=0.3, n=10)
    z = (0.9 - 0.2) / np.sqrt(0.3 ** 2 + 0.25 ** 2)
    np.testing.assert_allclose(engine.calibrate_p(null, [0.9], [0.25]),
                               [2 * stats.norm.sf(z)], rtol=1e-14)
    np.testing.assert_allclose(engine.calibrate_p(null, [0.9], [0.25], two_sided=False),
                               [stats.norm.sf(z)], rtol=1e-14)
    assert np.isnan(engine.calibrate_p(null, [np.inf], [0.1])[0])


def test_systematic_error_model_and_calibrated_ci_match_the_vignette(southworth):
    controls = southworth[southworth["trueLogRr"].notna()]
    model = engine.fit_systematic_error_model(controls["logRr"], controls["seLogRr"],
                                              controls["trueLogRr"])
    np.testing.assert_allclose(
        [model.mean_intercept, model.mean_slope, model.sd_intercept, model.sd_slope],
        [-0.066550795, 0.933292141, 0.187468405, 0.002979502], atol=1e-5)
    theta = [model.mean_intercept, model.mean_slope, model.sd_intercept, model.sd_slope]
    y, s, x = (controls[c].to_numpy() for c in ("logRr", "seLogRr", "trueLogRr"))
    best = error_model_loglik(theta, y, s, x)
    rng = np.random.default_rng(0)
    for step in rng.normal(scale=1e-3, size=(200, 4)):     # no nearby point does better
        assert error_model_loglik(np.add(theta, step), y, s, x) <= best + 1e-9
    gi = southworth[southworth["trueLogRr"].isna()]
    ci = engine.calibrate_ci(gi["logRr"], gi["seLogRr"], model)
    np.testing.assert_allclose(ci.iloc[0], [-0.3117702, -0.733957, 0.1067054, 0.2144587],
                               atol=1e-4)                  # R's uniroot tolerance: 1.2e-4


def test_calibrated_bounds_solve_their_equation():
    model = engine.SystematicErrorModel(0.1, 0.9, 0.2, 0.05)
    ci = engine.calibrate_ci([0.5], [0.1], model, level=0.9).iloc[0]
    z = stats.norm.ppf(0.95)
    for x, target in ((ci["log_lower"], z), (ci["log_upper"], -z), (ci["log_rr"], 0.0)):
        sd = 0.2 + 0.05 * abs(x)
        np.testing.assert_allclose((0.5 - 0.1 - 0.9 * x) / np.sqrt(sd ** 2 + 0.01), target,
                                   atol=1e-10)
    # negative controls only: the null at every true effect
    null = engine.EmpiricalNull(mean=0.1, sd=0.2, n=5)
    m = engine.error_model(null)
    assert (m.mean_intercept, m.mean_slope, m.sd_intercept, m.sd_slope) == (0.1, 1.0, 0.2, 0.0)


def test_negative_controls_fitted_by_engine_fit_calibrate_a_study():
    rng = np.random.default_rng(7)
    n = 400
    treat = rng.integers(0, 2, n).astype(float)
    age = rng.normal(size=n)
    X = np.column_stack([treat, age])
    rate = np.exp(0.6 * treat + 0.3 * age)
    t, c = rng.exponential(1 / rate), rng.exponential(1.5, n)
    cohort = engine.Cohort.from_arrays(np.minimum(t, c), (t <= c).astype(int), X,
                                       names=["treat", "age"])
    outcomes = {}
    for k in range(8):       # outcomes the treatment does not cause, with a shared bias
        tk = rng.exponential(1 / np.exp(0.15 * treat + 0.2 * age + rng.normal(0, 0.1)))
        outcomes[f"nc{k}"] = (np.minimum(tk, c), (tk <= c).astype(int))
    outcomes["empty"] = (np.minimum(t, c), np.zeros(n, int))
    stop = threading.Event()
    stop.set()
    with pytest.raises(engine.Cancelled):       # Cancel stops the controls' fits too
        engine.negative_control_estimates(cohort, outcomes, "treat", cancel=stop)
    controls = engine.negative_control_estimates(cohort, outcomes, "treat")
    assert list(controls["outcome"]) == [*(f"nc{k}" for k in range(8)), "empty"]
    empty = controls.set_index("outcome").loc["empty"]
    assert empty["error"] != "" and np.isnan(empty["log_rr"])
    first = engine.fit(engine.Cohort.from_arrays(*outcomes["nc0"], X, names=["treat", "age"]),
                       unpenalized=["treat"])
    np.testing.assert_allclose(controls.loc[0, ["log_rr", "se"]].to_numpy(float),
                               [first.coef["treat"], first.se["treat"]], rtol=1e-12)
    res = engine.sensitivity_study(cohort, "treat", vary={"covariates": [["treat"], None]})
    table = res.calibrate(controls)
    null = engine.fit_null(controls["log_rr"], controls["se"])
    np.testing.assert_allclose(table["calibrated_p"],
                               engine.calibrate_p(null, table["estimate"], table["se"]),
                               rtol=1e-14)
    ci = engine.calibrate_ci(table["estimate"], table["se"], engine.error_model(null))
    np.testing.assert_allclose(np.log(table["calibrated_lower"]), ci["log_lower"], rtol=1e-14)
    assert (table["calibrated_lower"] < table["hr"]).all()
    assert (table["hr"] < table["calibrated_upper"]).all()
