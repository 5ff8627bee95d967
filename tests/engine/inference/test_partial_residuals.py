"""engine.residuals' partial residuals (R's termplot residuals) and dfbetas against R's
residuals.coxph on rossi, saved by tests/data/r_partial_residuals.R (R 4.2.2, survival 3.5-3):
Efron, Breslow with strata and case weights, and a formula's terms (a spline's whole basis one
term, an interaction); to 1e-6, the two fits' convergence (5e-9 apart at most)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

R = pd.read_csv(Path(__file__).parents[2] / "data" / "r_partial_residuals.csv.gz")


def r_table(case, kind):
    part = R[(R["case"] == case) & (R["kind"] == kind)]
    return part.pivot(index="row", columns="term", values="value")


@pytest.fixture
def weighted(rossi):
    return rossi.assign(w=0.5 + (np.arange(1, len(rossi) + 1) % 7) / 4)


@pytest.mark.parametrize("kind", ["partial", "dfbetas"])
def test_plain_and_weighted_stratified_fits_against_R(rossi, weighted, kind):
    efron = engine.fit(engine.Cohort.from_frame(
        rossi, "week", "arrest", covariates=["fin", "age", "prio", "race"]), ties="efron")
    breslow = engine.fit(engine.Cohort.from_frame(
        weighted, "week", "arrest", covariates=["fin", "age", "prio"], strata="wexp",
        weights="w"), ties="breslow")
    for res, case in ((efron, "efron"), (breslow, "breslow_strata_weights")):
        want = r_table(case, kind)
        got = engine.residuals(res, kind)
        assert sorted(got.columns) == sorted(want.columns)
        np.testing.assert_allclose(got[want.columns].to_numpy(), want.to_numpy(), rtol=1e-6,
                                   atol=1e-8)


def test_a_formulas_terms_against_R(rossi):
    res = engine.fit(engine.Cohort.from_frame(
        rossi, "week", "arrest", formula="fin + ns(age, df=3) + prio + fin:prio"), ties="efron")
    got = engine.residuals(res, "partial")
    want = r_table("efron_terms", "partial").rename(columns={"ns(age, df = 3)": "ns(age, df=3)"})
    assert list(got.columns) == ["fin", "ns(age, df=3)", "prio", "fin:prio"]
    np.testing.assert_allclose(got[want.columns].to_numpy(), want.to_numpy(), rtol=1e-6,
                               atol=1e-8)
    spline = engine.residuals(res, "partial", columns="ns(age, df=3)")
    np.testing.assert_array_equal(spline["ns(age, df=3)"], got["ns(age, df=3)"])


def test_bad_terms_and_cut_point_fits_say_what_to_do(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    with pytest.raises(ValueError, match=r"\['bmi'\] are not terms.*'age'"):
        engine.residuals(engine.fit(cohort), "partial", columns=["bmi"])
    cut = engine.fit(cohort, cut_points={"fin": [20.0]})
    with pytest.raises(ValueError, match="cut points.*without cut points"):
        engine.residuals(cut, "partial")
    dfbetas = engine.residuals(cut, "dfbetas")           # per subject, as dfbeta
    np.testing.assert_allclose(dfbetas, engine.residuals(cut, "dfbeta") / cut.se.to_numpy(),
                               rtol=1e-12)
