"""Aliasing at its source: columns that are combinations of others only within the rows that
enter a risk set ((start, stop] episodes: a covariate times a period factor, a function of time)
come back as R's coxph gives them, NaN by name with a warning, and the other coefficients equal
the fit without them; a standard error at the rounding floor is never shown as an estimate."""
import warnings

import numpy as np
import pandas as pd
import pytest

import engine
from engine.regression import problem as problem_module

CUTS = (20, 40)
KEPT = ["fin", "age", "prio", "age_p2", "age_p3"]


def episodes() -> pd.DataFrame:
    """rossi split at weeks 20 and 40: one (start, stop] row per subject and period, with the
    period indicators p2, p3 and the products age x period."""
    rossi = engine.datasets.load_rossi().reset_index(drop=True)
    rows = []
    for i, r in rossi.iterrows():
        edges = [0, *[c for c in CUTS if c < r.week], r.week]
        for k, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            rows.append({"id": i, "start": a, "stop": b,
                         "arrest": int(r.arrest and b == r.week), "fin": r.fin, "age": r.age,
                         "prio": r.prio, "p2": float(k == 1), "p3": float(k == 2)})
    df = pd.DataFrame(rows)
    df["age_p2"] = df.age * df.p2
    df["age_p3"] = df.age * df.p3
    # equal to age_p3 plus 5 x p3, a function of time: aliased within every risk set, not
    # on all rows (p3 varies across the rows of the data set)
    df["age_p3b"] = df.age_p3 + 5.0 * df.p3
    return df


def fit(df, covariates, **kw):
    coh = engine.Cohort.from_frame(df, time="stop", event="arrest", start="start", id="id",
                                   covariates=covariates)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = engine.fit(coh, **kw)
        se = res.se
    return res, se, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_period_products_aliased_only_on_risk_set_rows_are_nan_by_name(ties):
    df = episodes()
    ref, ref_se, ref_caught = fit(df, KEPT, ties=ties)
    assert not ref_caught
    res, se, caught = fit(df, [*KEPT, "age_p3b", "p2", "p3"], ties=ties)
    for name in ("age_p3b", "p2", "p3"):
        assert np.isnan(res.coef[name]) and np.isnan(se[name])
        assert np.isnan(res.summary.loc[name, "p"])
    np.testing.assert_allclose(res.coef[KEPT], ref.coef[KEPT], rtol=1e-8)
    np.testing.assert_allclose(se[KEPT], ref_se[KEPT], rtol=1e-8)
    assert res.loglik == pytest.approx(ref.loglik, rel=1e-12)
    messages = [m for c, m in caught if c is engine.DataWarning]
    assert any("'age_p3b' is a linear combination of age_p3" in m for m in messages)
    for name in ("p2", "p3"):
        assert any(f"'{name}' is constant within every risk set" in m for m in messages)
    assert not [m for c, m in caught if issubclass(c, engine.ConvergenceWarning)]


def test_a_column_zero_on_every_risk_set_row_is_nan():
    """A product that is non-zero only on rows after the last event enters no risk set."""
    df = episodes()
    last = df.loc[df.arrest == 1, "stop"].max()
    df["late"] = np.where(df.stop > last, df.age, 0.0)
    df.loc[df.stop > last, "start"] = np.maximum(df.loc[df.stop > last, "start"], last)
    if not (df.late != 0).any():             # rossi's last arrest is at week 52: make a row
        df = pd.concat([df, df.iloc[[0]].assign(id=10_000, start=60.0, stop=70.0, arrest=0,
                                                late=30.0)], ignore_index=True)
    ref, ref_se, _ = fit(df, KEPT)
    res, se, caught = fit(df, [*KEPT, "late"])
    assert np.isnan(res.coef["late"]) and np.isnan(se["late"])
    np.testing.assert_allclose(res.coef[KEPT], ref.coef[KEPT], rtol=1e-8)
    assert any("'late' is constant within every risk set" in m for _, m in caught)


def test_logistic_column_aliased_with_the_intercept():
    """(Constant columns never reach the model: the Cohort drops them.)"""
    df = engine.datasets.load_rossi().assign(fin_plus=lambda d: d.fin + 3.0)
    coh = engine.Cohort.from_frame(df, time=None, event="arrest",
                                   covariates=["fin", "age", "fin_plus"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = engine.fit(coh, model="logistic")
        se = res.se
    ref = engine.fit(engine.Cohort.from_frame(df, time=None, event="arrest",
                                              covariates=["fin", "age"]), model="logistic")
    assert np.isnan(res.coef["fin_plus"]) and np.isnan(se["fin_plus"])
    np.testing.assert_allclose(res.coef[["(intercept)", "fin", "age"]], ref.coef, rtol=1e-8)
    np.testing.assert_allclose(se[["(intercept)", "fin", "age"]], ref.se, rtol=1e-8)
    messages = [str(w.message) for w in caught]
    assert any("'fin_plus' is a linear combination of (intercept), fin" in m for m in messages)


def test_standard_errors_at_the_rounding_floor_are_not_estimates(monkeypatch):
    """With the check skipped (over its cost budget), the singular information still never
    passes a standard error of 1e-12 or below as an estimate."""
    monkeypatch.setattr(problem_module, "ALIAS_CHECK_BUDGET", 0.0)
    res, se, caught = fit(episodes(), [*KEPT, "p2", "p3"], max_iter=50)
    shown = se.dropna()
    assert (shown > 1e-12).all()
    assert se[["p2", "p3"]].isna().all()
    assert any("reported as NaN" in m for _, m in caught)


def test_sccs_combination_within_cases_is_nan():
    """The conditional likelihood of the SCCS compares eras within a case: x1 plus a covariate
    of the case (the same in all its eras) is x1 there, though not on all rows."""
    from sccs_oracles import simulated
    case, length, y, X = simulated(3, n_cases=40, p=3)
    names = ["x0", "x1", "x2"]
    shifted = X[:, [1]] + (case % 3).astype(float)[:, None]
    ref = engine.fit(engine.SccsData.from_arrays(case=case, length=length, events=y, X=X,
                                                 names=names), model="sccs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = engine.fit(engine.SccsData.from_arrays(case=case, length=length, events=y,
                                                     X=np.hstack([X, shifted]),
                                                     names=[*names, "x1_shifted"]), model="sccs")
        se = res.se
    assert np.isnan(res.coef["x1_shifted"]) and np.isnan(se["x1_shifted"])
    np.testing.assert_allclose(res.coef[names], ref.coef[names], rtol=1e-8)
    np.testing.assert_allclose(se[names], ref.se[names], rtol=1e-8)
    assert any("'x1_shifted' is a linear combination of x1" in str(w.message) for w in caught)


def test_fine_gray_combination_is_nan():
    rossi = engine.datasets.load_rossi()
    df = rossi.assign(cause=rossi.arrest * (1 + (rossi.prio > 3)), fin_age=rossi.fin + rossi.age)

    def fg(covariates):
        coh = engine.Cohort.from_frame(df, time="week", event="cause", covariates=covariates,
                                       competing_risks=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = engine.fit(coh, model="fine_gray", cause=1)
            se = res.se
        return res, se, [str(w.message) for w in caught]

    ref, ref_se, _ = fg(["fin", "age", "race"])
    res, se, messages = fg(["fin", "age", "fin_age", "race"])
    assert np.isnan(res.coef["fin_age"]) and np.isnan(se["fin_age"])
    np.testing.assert_allclose(res.coef[["fin", "age", "race"]], ref.coef, rtol=1e-8)
    np.testing.assert_allclose(se[["fin", "age", "race"]], ref_se, rtol=1e-8)
    assert any("'fin_age' is a linear combination of fin, age" in m for m in messages)
