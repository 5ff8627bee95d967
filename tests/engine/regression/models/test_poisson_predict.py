"""A Poisson fit's predictions (FitResult.predict: the log rate, the rate, the expected events
over a row's person-time, with delta-method SEs and limits) against statsmodels' GLM
get_prediction with log person-time as the offset: model-based and with the sandwich, for new
rows, the fitted rows and a formula's spline; and the choices that have no single prediction
refused with the reason."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import engine

COVARIATES = ["fin", "age", "prio"]


def glm(frame, offset, weights=None, cov_type="nonrobust"):
    return sm.GLM(frame["arrest"], sm.add_constant(frame[COVARIATES].astype(float)),
                  family=sm.families.Poisson(), offset=offset,
                  var_weights=weights).fit(tol=1e-13, cov_type=cov_type)


def predicted(model, rows, offset):
    exog = sm.add_constant(rows[COVARIATES].astype(float), has_constant="add")
    return model.get_prediction(exog, offset=offset).summary_frame()


def test_rates_and_expected_events_as_statsmodels(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=COVARIATES)
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    oracle = glm(rossi, np.log(rossi["week"]))
    new = rossi.iloc[::37]
    for kind, offset in (("rate", np.zeros(len(new))), ("expected", np.log(new["week"]))):
        got, want = res.predict(new, type=kind), predicted(oracle, new, offset)
        assert list(got.index) == list(new.index)
        for ours, theirs in (("fit", "mean"), ("se", "mean_se"), ("lower", "mean_ci_lower"),
                             ("upper", "mean_ci_upper")):
            np.testing.assert_allclose(got[ours], want[theirs], rtol=1e-7)
    lp = res.predict(new, type="lp")
    np.testing.assert_allclose(lp["fit"], np.log(res.predict(new, type="rate")["fit"]),
                               rtol=1e-13)
    fitted = res.predict(type="expected")                  # the fitted rows: R's fitted()
    np.testing.assert_allclose(fitted["fit"], oracle.fittedvalues, rtol=1e-7)
    assert fitted["fit"].sum() == pytest.approx(rossi["arrest"].sum(), rel=1e-9)


def test_sandwich_standard_errors_as_statsmodels(rossi):
    """Weights that are not counts: the fit reports the Huber-White sandwich, and so do its
    predictions (statsmodels' HC0 with var_weights)."""
    w = 0.5 + (np.arange(len(rossi)) % 7) / 4
    frame = rossi.assign(w=w)
    cohort = engine.Cohort.from_frame(frame, "week", "arrest", covariates=COVARIATES,
                                      weights="w")
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    assert res.variance == "robust"
    oracle = glm(frame, np.log(frame["week"]), weights=w, cov_type="HC0")
    new = frame.head(6)
    got, want = res.predict(new, type="rate"), predicted(oracle, new, np.zeros(6))
    np.testing.assert_allclose(got["se"], want["mean_se"], rtol=1e-6)


def test_a_formula_spline_and_no_covariance_under_a_penalty(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", formula="fin + ns(age, df=3)")
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    X = res.design_matrix(rossi).toarray()
    oracle = sm.GLM(rossi["arrest"], X, family=sm.families.Poisson(),
                    offset=np.log(rossi["week"])).fit(tol=1e-13)
    new = pd.DataFrame({"fin": [0, 1, 1], "age": [18.5, 25.0, 41.0], "week": [52, 10, 30]})
    want = oracle.get_prediction(res.design_matrix(new).toarray(),
                                 offset=np.log(new["week"])).summary_frame()
    got = res.predict(new, type="expected")
    np.testing.assert_allclose(got["fit"], want["mean"], rtol=1e-7)
    np.testing.assert_allclose(got["upper"], want["mean_ci_upper"], rtol=1e-7)
    lasso = engine.fit(cohort, model="poisson", penalty=engine.L1(0.5))
    out = lasso.predict(new, type="rate")
    assert np.isfinite(out["fit"]).all() and out["se"].isna().all()


def test_what_has_no_single_prediction_is_refused(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=COVARIATES)
    res = engine.fit(cohort, model="poisson")
    with pytest.raises(ValueError, match="type must be one of"):
        res.predict(rossi.head(), type="survival")
    with pytest.raises(ValueError, match="needs each row's person-time.*'week'"):
        res.predict(rossi.head()[COVARIATES], type="expected")
    with pytest.raises(ValueError, match="person-time >= 0"):
        res.predict(rossi.head().assign(week=[-1, 2, 3, 4, 5]), type="expected")
    banded = engine.fit(cohort, model="poisson", bands=[20])
    with pytest.raises(ValueError, match="splits follow-up into bands"):
        banded.predict(rossi.head())
