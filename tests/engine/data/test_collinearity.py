"""Aliased (collinear) unpenalised covariates are named and reported as NaN, as R's coxph does;
the other coefficients equal the fit without them."""
import warnings

import numpy as np
import pytest

import engine

BASE = ["fin", "age", "race", "prio"]


def fit(df, covariates, **kw):
    coh = engine.Cohort.from_frame(df, time="week", event="arrest", covariates=covariates,
                                   strata=kw.pop("strata", None))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = engine.fit(coh, ties="efron", **kw)
    return res, [str(w.message) for w in caught if issubclass(w.category, engine.DataWarning)]


def test_combinations_are_named_and_not_estimated():
    df = engine.datasets.load_rossi().assign(fin_age=lambda d: d.fin + d.age,
                                             race2=lambda d: 1 - d.race)
    res, messages = fit(df, ["fin", "age", "fin_age", "race", "race2", "prio"])
    ref, _ = fit(df, BASE)
    assert np.isnan(res.coef["fin_age"]) and np.isnan(res.coef["race2"])
    np.testing.assert_allclose(res.coef[BASE], ref.coef[BASE], rtol=1e-10)
    np.testing.assert_allclose(res.se[BASE], ref.se[BASE], rtol=1e-8)
    assert res.loglik == pytest.approx(ref.loglik, rel=1e-12)
    assert any("'fin_age' is a linear combination of fin, age" in m for m in messages)
    assert any("'race2' is a linear combination of race" in m for m in messages)


def test_constant_within_strata_is_aliased():
    df = engine.datasets.load_rossi()
    df = df.assign(race_copy=df.race * 2.0)       # constant within each stratum of race
    res, messages = fit(df, ["fin", "age", "race_copy", "prio"], strata="race")
    assert np.isnan(res.coef["race_copy"])
    assert any("'race_copy' is constant within every risk set" in m for m in messages)


def test_penalised_columns_are_left_to_the_penalty():
    df = engine.datasets.load_rossi().assign(fin_age=lambda d: d.fin + d.age)
    res, messages = fit(df, ["fin", "age", "fin_age", "prio"], penalty=engine.L2(1.0))
    assert np.all(np.isfinite(res.coef)) and not messages
