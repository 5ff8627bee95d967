"""Joint Wald tests, interaction tests and effect curves against brute-force definitions on
lifelines' coefficients and covariance (an independent fit of the same columns)."""
import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from scipy import stats

import engine
from engine.core.errors import CohortError
from formula_data import frame, harrell_rcs

FORMULA = "age + sex * treat + rcs(bmi, 4)"


@pytest.fixture(scope="module")
def fits():
    df = frame(n=600, seed=11)
    cohort = engine.Cohort.from_frame(df, "time", "event", formula=FORMULA)
    res = engine.fit(cohort, ties="efron", tol=1e-13)
    knots = np.quantile(df.bmi, [0.05, 0.35, 0.65, 0.95])
    own = pd.DataFrame(harrell_rcs(df.bmi.to_numpy(), knots), columns=["b0", "b1", "b2"])
    cph = CoxPHFitter().fit(pd.concat([df, own], axis=1), "time", "event",
                            formula="age + sex * treat + b0 + b1 + b2",
                            fit_options={"precision": 1e-13})
    rename = {"b0": "rcs(bmi, 4)[x]", "b1": "rcs(bmi, 4)[x']", "b2": "rcs(bmi, 4)[x'']"}
    coef = cph.params_.rename(index=rename)
    cov = cph.variance_matrix_.rename(index=rename, columns=rename)
    return df, res, coef, cov, knots


def brute_wald(coef, cov, names):
    b = coef[names].to_numpy()
    return float(b @ np.linalg.inv(cov.loc[names, names].to_numpy()) @ b)


def test_joint_wald_test_of_the_spline_term(fits):
    _, res, coef, cov, _ = fits
    names = ["rcs(bmi, 4)[x]", "rcs(bmi, 4)[x']", "rcs(bmi, 4)[x'']"]
    np.testing.assert_allclose(res.coef[coef.index], coef, rtol=1e-6)
    test = engine.wald_test(res, term="rcs(bmi, 4)")
    assert test["df"] == 3
    np.testing.assert_allclose(test["statistic"], brute_wald(coef, cov, names), rtol=1e-6)
    np.testing.assert_allclose(test["p"], stats.chi2.sf(test["statistic"], 3), rtol=1e-12)
    by_variable = engine.wald_test(res, variable="bmi")
    np.testing.assert_allclose(by_variable["statistic"], test["statistic"], rtol=1e-12)
    nonlinear = engine.wald_test(res, names=names[1:])        # the test of linearity
    assert nonlinear["df"] == 2
    np.testing.assert_allclose(nonlinear["statistic"], brute_wald(coef, cov, names[1:]),
                               rtol=1e-6)


def test_variable_test_takes_its_interactions_too(fits):
    _, res, coef, cov, _ = fits
    main = engine.wald_test(res, term="treat")
    assert main["df"] == 1
    np.testing.assert_allclose(main["statistic"], brute_wald(coef, cov, ["treat"]), rtol=1e-6)
    test = engine.wald_test(res, variable="treat")
    assert test["df"] == 2
    np.testing.assert_allclose(test["statistic"],
                               brute_wald(coef, cov, ["treat", "sex[T.M]:treat"]), rtol=1e-6)


def test_interaction_test_is_the_wald_test_of_the_product_columns(fits):
    _, res, coef, cov, _ = fits
    test = engine.interaction_test(res, "treat", "sex")
    assert test["df"] == 1
    z = coef["sex[T.M]:treat"] / np.sqrt(cov.loc["sex[T.M]:treat", "sex[T.M]:treat"])
    np.testing.assert_allclose(test["statistic"], z ** 2, rtol=1e-6)
    np.testing.assert_allclose(test["p"], 2 * stats.norm.sf(abs(z)), rtol=1e-5)


def test_effect_curve_is_the_contrast_of_design_rows(fits):
    """rms Predict(fit, bmi, ref.zero=TRUE): log HR(a) = (x(a) - x(ref))' b with the band from
    d' V d; here x(.) from Harrell's truncated-power columns written in the tests."""
    df, res, coef, cov, knots = fits
    at = np.array([20.0, 24.0, 27.0, 31.0, 35.0])
    reference = float(np.median(df.bmi))
    curve = engine.effect_curve(res, "bmi", at=at, reference=reference, level=0.9)
    names = ["rcs(bmi, 4)[x]", "rcs(bmi, 4)[x']", "rcs(bmi, 4)[x'']"]
    d = harrell_rcs(at, knots) - harrell_rcs(np.array([reference]), knots)
    log_hr = d @ coef[names].to_numpy()
    se = np.sqrt(np.einsum("ij,jk,ik->i", d, cov.loc[names, names].to_numpy(), d))
    np.testing.assert_allclose(curve["log_hr"], log_hr, rtol=1e-6)
    np.testing.assert_allclose(curve["se"], se, rtol=1e-6)
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(curve["lower"], np.exp(log_hr - z * se), rtol=1e-6)
    np.testing.assert_allclose(curve["upper"], np.exp(log_hr + z * se), rtol=1e-6)
    default = engine.effect_curve(res, "bmi", at=at)          # reference: the median
    np.testing.assert_allclose(default["log_hr"], curve["log_hr"], rtol=1e-12)


def test_effect_curve_of_an_interacting_variable_depends_on_the_other(fits):
    _, res, coef, cov, _ = fits
    for sex, d in (("F", np.array([1.0, 0.0])), ("M", np.array([1.0, 1.0]))):
        curve = engine.effect_curve(res, "treat", at=[1], reference=0, adjust_to={"sex": sex})
        names = ["treat", "sex[T.M]:treat"]
        np.testing.assert_allclose(curve["log_hr"], [d @ coef[names]], rtol=1e-6)
        np.testing.assert_allclose(curve["se"], [np.sqrt(d @ cov.loc[names, names] @ d)],
                                   rtol=1e-6)


def test_bad_requests_name_the_fix(fits):
    df, res, _, _, _ = fits
    with pytest.raises(CohortError, match="not a term"):
        engine.wald_test(res, term="bmi")
    with pytest.raises(CohortError, match="not a variable"):
        engine.wald_test(res, variable="weight")
    with pytest.raises(ValueError, match="give one of term="):
        engine.wald_test(res)
    with pytest.raises(CohortError, match="no interaction of 'age' and 'sex'"):
        engine.interaction_test(res, "age", "sex")
    with pytest.raises(ValueError, match="not a variable"):
        engine.effect_curve(res, "weight", at=[1])
    with pytest.raises(CohortError, match="extrapolate"):
        engine.effect_curve(res, "bmi", at=[df.bmi.max() + 10])
    plain = engine.fit(engine.Cohort.from_frame(df, "time", "event", covariates=["age"]))
    with pytest.raises(ValueError, match="formula"):
        engine.effect_curve(plain, "age", at=[50])
    np.testing.assert_allclose(engine.wald_test(plain, term="age")["statistic"],
                               (plain.coef["age"] / plain.se["age"]) ** 2, rtol=1e-12)
    penalized = engine.fit(res.problem.cohort, penalty=engine.L2(1.0), unpenalized=["age"])
    with pytest.raises(ValueError, match="penalised"):
        engine.wald_test(penalized, term="rcs(bmi, 4)")


def test_effect_curve_of_a_category_is_its_hazard_ratio():
    df = frame(n=500, seed=3)
    res = engine.fit(engine.Cohort.from_frame(df, "time", "event", formula="age + C(site)"))
    curve = engine.effect_curve(res, "site", at=["south", "west"], reference="north")
    names = ["C(site)[T.south]", "C(site)[T.west]"]
    np.testing.assert_allclose(curve["hr"], np.exp(res.coef[names]), rtol=1e-12)
    np.testing.assert_allclose(curve["se"], res.se[names], rtol=1e-12)
    assert list(curve["site"]) == ["south", "west"]


def test_effect_curve_of_an_orthogonal_polynomial_is_the_raw_polynomials():
    """poly(age, 2) and age + I(age ** 2) span the same columns: the same hazard-ratio curve
    and band, with the polynomial's state (its recurrence) rebuilt for the new rows."""
    df = frame(n=500, seed=5)
    at = np.linspace(df.age.min(), df.age.max(), 9)
    curves = [engine.effect_curve(engine.fit(engine.Cohort.from_frame(
        df, "time", "event", formula=formula), ties="efron", tol=1e-13), "age", at=at)
        for formula in ("treat + poly(age, 2)", "treat + age + I(age ** 2)")]
    np.testing.assert_allclose(curves[0][["log_hr", "se"]], curves[1][["log_hr", "se"]],
                               rtol=1e-8)
    assert curves[0]["log_hr"].abs().max() > 0.1


def test_a_logistic_fits_odds_ratio_curve_against_statsmodels(rossi):
    """A logistic fit's design rows carry its intercept (a column of ones), so effect_curve
    gives the odds ratio of a spline's exposure: statsmodels' Logit on the same columns, and
    its t_test of the same contrasts, to 1e-6."""
    import statsmodels.api as sm

    cohort = engine.Cohort.from_frame(rossi, time=None, event="arrest",
                                      formula="fin + ns(age, df=3) + prio")
    res = engine.fit(cohort, model="logistic", tol=1e-12)
    X = res.design_matrix(rossi).toarray()
    assert list(res.coef.index)[0] == "(intercept)" and np.all(X[:, 0] == 1.0)
    ref = sm.Logit(rossi["arrest"].to_numpy(), X).fit(disp=0, tol=1e-12)
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params, rtol=1e-6)
    curve = engine.effect_curve(res, "age", at=[20, 30, 40], reference=25)
    rows = res.design_matrix(pd.DataFrame({"fin": 0, "age": [20, 30, 40, 25],
                                           "prio": 2})).toarray()
    contrast = ref.t_test(rows[:3] - rows[3])
    np.testing.assert_allclose(curve["log_hr"], contrast.effect, rtol=1e-6)
    np.testing.assert_allclose(curve["se"], contrast.sd.ravel(), rtol=1e-6)
