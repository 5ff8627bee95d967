"""Each term's part of the linear predictor with its standard error, ``res.predict(newdata,
type="terms")``, against R 4.2.2 / survival 3.5-3's predict(fit, newdata, type = "terms",
se.fit = TRUE) (tests/data/r_predict_terms.R writes the oracle): a natural spline whose whole
basis is one term, an interaction, a 0/1 column centred at 0 (survival 3.x's fit$means), strata
and case weights (the terms are centred at the overall means all the same), for the fitted rows
and a grid of new ones; and by definition, the terms sum to the linear predictor (up to its
centre) and the partial residuals are the martingale residuals plus them."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

R = pd.read_csv(Path(__file__).parents[2] / "data" / "r_predict_terms.csv")
GRID = pd.DataFrame([(age, fin, prio, wexp % 2)
                     for wexp, (prio, fin, age) in enumerate(
                         (p, f, a) for p in (0, 3, 11) for f in (0, 1)
                         for a in (18, 21.5, 25, 30, 37.25, 44))],
                    columns=["age", "fin", "prio", "wexp"])
R_TERMS = {"ns(age, df = 3)": "ns(age, df=3)"}      # R's label -> survscan's


@pytest.fixture(scope="module")
def fits(rossi):
    terms = engine.fit(engine.Cohort.from_frame(
        rossi, "week", "arrest", formula="fin + ns(age, df=3) + prio + fin:prio"),
        ties="efron", tol=1e-12)
    weighted = rossi.assign(w=0.5 + (np.arange(1, len(rossi) + 1) % 7) / 4)
    strata = engine.fit(engine.Cohort.from_frame(
        weighted, "week", "arrest", covariates=["fin", "age", "prio"], strata=["wexp"],
        weights="w"), ties="breslow", tol=1e-12)
    return {"terms": terms, "strata_weights": strata}


@pytest.mark.parametrize("case", ["terms", "strata_weights"])
@pytest.mark.parametrize("rows", ["fitted", "grid"])
def test_terms_against_r(fits, case, rows):
    res = fits[case]
    got = res.predict(None if rows == "fitted" else GRID, type="terms")
    oracle = R[R["case"] == f"{case}_{rows}"]
    assert list(got["fit"].columns) == [R_TERMS.get(t, t) for t in oracle["term"].unique()]
    for term, part in oracle.groupby("term", sort=False):
        mine = R_TERMS.get(term, term)
        scale = np.abs(part["fit"]).max()
        np.testing.assert_allclose(got["fit"][mine], part["fit"], rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(got["se"][mine], part["se"], rtol=1e-6,
                                   atol=1e-9 * part["se"].max())


def test_terms_sum_to_the_linear_predictor_and_make_the_partial_residuals(fits):
    res = fits["terms"]
    got = res.predict(GRID, type="terms")
    lp = res.predict(GRID, type="lp", reference="sample")["fit"]
    # the same: both centred at R's fit$means (a 0/1 column at 0), as R's sum of the terms
    # is its lp
    assert np.abs(got["fit"].sum(axis=1) - lp).max() < 1e-12
    partial = engine.residuals(res, "partial")
    martingale = engine.residuals(res).to_numpy()
    fitted = res.predict(type="terms")["fit"]
    for term in fitted.columns:
        np.testing.assert_allclose(partial[term], martingale + fitted[term], atol=1e-12)


def test_a_penalised_fit_has_terms_without_standard_errors(rossi):
    res = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              formula="fin + ns(age, df=3) + prio"),
                     penalty=engine.L2(1.0))
    got = res.predict(GRID.head(3), type="terms")
    assert np.isfinite(got["fit"].to_numpy()).all() and np.isnan(got["se"].to_numpy()).all()


def test_bad_newdata_names_the_column(fits):
    with pytest.raises(Exception, match="age"):
        fits["terms"].predict(GRID.drop(columns="age"), type="terms")
