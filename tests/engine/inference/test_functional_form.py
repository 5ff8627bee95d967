"""engine.functional_form against R: lowess(x, resid(coxph(...))) of rossi, saved by
tests/data/r_functional_form.R (R 4.2.2, survival 3.5-3), for covariates in the fit, a 0/1
and a mostly-zero one (where statsmodels' lowess is 0.5 off), one left out, the null model,
strata with Breslow ties and a span without robustness iterations."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

R = pd.read_csv(Path(__file__).parents[2] / "data" / "r_functional_form.csv.gz")


def r_smooth(case):
    return R[R["case"] == case]


def assert_like_r(form, case, atol=1e-10):
    """R's lowess returns the points sorted by x (ties keep their order, and get one value)."""
    want = r_smooth(case)
    got = form.sort_values("x", kind="stable")
    np.testing.assert_array_equal(got["x"].to_numpy(), want["x"].to_numpy())
    np.testing.assert_allclose(got["smooth"].to_numpy(), want["smooth"].to_numpy(), rtol=0,
                               atol=atol)


@pytest.fixture
def efron_fit(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    return engine.fit(cohort, ties="efron")


def test_covariates_of_the_fit_against_R(efron_fit):
    for name in ("age", "prio"):
        form = engine.functional_form(efron_fit, name)
        np.testing.assert_array_equal(form["martingale"], engine.residuals(efron_fit))
        assert_like_r(form, f"efron_{name}")
    assert_like_r(engine.functional_form(efron_fit, "age", frac=0.3, iterations=0),
                  "efron_age_f0.3_iter0")
    assert_like_r(engine.functional_form(efron_fit, "fin"), "efron_fin")


def test_a_mostly_zero_covariate_against_R(efron_fit, rossi):
    form = engine.functional_form(efron_fit, np.maximum(rossi["prio"].to_numpy() - 5, 0))
    assert (form["x"] == 0).mean() > 0.8
    assert_like_r(form, "efron_prio_over_5")


def test_a_covariate_left_out_and_the_null_model_against_R(rossi):
    null = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[]),
                      ties="efron")
    assert_like_r(engine.functional_form(null, rossi["age"]), "efron_null_age")
    stratified = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                                     covariates=["fin", "prio"],
                                                     strata="wexp"), ties="breslow")
    assert_like_r(engine.functional_form(stratified, rossi["age"].to_numpy()),
                  "breslow_strata_age")


def test_the_null_model_of_a_fit_against_R(efron_fit, rossi):
    """null=True: the residuals of the model without covariates, with the fit's strata and
    ties (R: resid(coxph(Surv(week, arrest) ~ 1)) and ~ strata(wexp), Breslow)."""
    assert_like_r(engine.functional_form(efron_fit, "age", null=True), "efron_null_age")
    stratified = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                                     covariates=["fin", "age"],
                                                     strata="wexp"), ties="breslow")
    assert_like_r(engine.functional_form(stratified, "age", null=True),
                  "breslow_strata_null_age")


def test_a_fit_with_cut_points_reads_the_rows_before_the_split(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    res = engine.fit(cohort, ties="efron", cut_points={"fin": [20.0]})
    form = engine.functional_form(res, "age")
    assert len(form) == len(rossi)
    np.testing.assert_array_equal(form["x"], rossi["age"].to_numpy(float))
    np.testing.assert_array_equal(form["martingale"], engine.residuals(res))


def test_a_splines_variable_by_name_on_the_rows_fitted(rossi):
    """A formula fit keeps the variables its splines read: functional_form(res, "age") is the
    form against the fitted rows' ages, after missing="drop" too (is the spline enough?)."""
    holed = rossi.assign(prio=rossi["prio"].where(rossi.index % 9 != 0))
    cohort = engine.Cohort.from_frame(holed, "week", "arrest",
                                      formula="fin + ns(age, df=3) + prio", missing="drop")
    res = engine.fit(cohort, ties="efron")
    assert list(cohort.variables) == ["age"] and cohort.n == int(holed["prio"].notna().sum())
    kept = holed.dropna(subset=["prio"])
    pd.testing.assert_frame_equal(engine.functional_form(res, "age"),
                                  engine.functional_form(res, kept["age"].to_numpy()))


def test_bad_covariates_say_what_to_do(efron_fit, rossi):
    with pytest.raises(ValueError, match=r"'race' is not a covariate.*pass its values"):
        engine.functional_form(efron_fit, "race")
    with pytest.raises(ValueError, match="has 3 values; the fit has 432 rows"):
        engine.functional_form(efron_fit, [1.0, 2.0, 3.0])
    age = rossi["age"].to_numpy(float)
    age[[4, 9]] = np.nan
    with pytest.raises(ValueError, match=r"missing or infinite values in rows \[4, 9\]"):
        engine.functional_form(efron_fit, age)
    with pytest.raises(ValueError, match="must be numbers"):
        engine.functional_form(efron_fit, ["a"] * len(rossi))
    with pytest.raises(ValueError, match="frac must be in"):
        engine.functional_form(efron_fit, "age", frac=0.0)


@pytest.mark.parametrize("x, y, frac, r_smooth_sorted", [
    # R 4.2.2: lowess(x, y, f = frac)$y, printed with 17 digits (points sorted by x)
    ([1, 1, 1, 1], [1, 2, 3, 7], 2 / 3, [2.9302524824766505] * 4),   # no spread in x
    ([1, 2], [3, 5], 2 / 3, [3, 5]),
    ([5], [2], 2 / 3, [2]),
    (range(1, 7), [2] * 6, 2 / 3, [2, 2, 2, 2, 2, 2.0000000000000013]),   # a perfect fit
    ([3, 1, 2, 2, 5, 4], [1, 4, 2, 8, 5, 7], 0.5, [4, 5, 5, 1, 7, 5.0000000000000009]),
])
def test_lowess_edge_cases_against_R(x, y, frac, r_smooth_sorted):
    from engine.inference.lowess import lowess

    smooth = lowess(np.asarray(x, float), np.asarray(y, float), frac)
    sorted_smooth = smooth[np.argsort(np.asarray(x, float), kind="stable")]
    np.testing.assert_allclose(sorted_smooth, r_smooth_sorted, rtol=0, atol=1e-13)


def test_lowess_fits_side_by_side_equal_those_one_after_another():
    """The parallel twin of the local fits (16 blocks, a scratch array each) gives the serial
    one's numbers to the bit, with ties and robustness weights."""
    from engine.inference import lowess as lw

    rng = np.random.default_rng(3)
    x = np.sort(np.round(rng.normal(50, 10, 3000)))
    y = rng.normal(size=x.size) + 0.05 * x
    at, left, right = lw._fit_points(x, int(2 / 3 * x.size + 1e-7), 0.01 * (x[-1] - x[0]))
    rw = rng.uniform(0, 1, x.size)
    for robust in (False, True):
        np.testing.assert_array_equal(lw._fits(x, y, at, left, right, robust, rw),
                                      lw._fits_parallel(x, y, at, left, right, robust, rw))
