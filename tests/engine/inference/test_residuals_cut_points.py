"""engine.residuals of Cox fits with cut points (a coefficient per interval) against R:
residuals(coxph of survSplit data, collapse = the row before the split), every row and every
column.  R 4.2.2, survival 3.5-3: the script is tests/data/r_residuals_cut_points.R, what it
wrote tests/data/r_residuals_cut_points.csv.gz and what it printed its .Rout."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

SAMPLE = Path(__file__).parents[3] / "sample_data"
DATA = Path(__file__).parents[2] / "data"
ROSSI = pd.read_csv(SAMPLE / "rossi.csv")
JASA1 = pd.read_csv(SAMPLE / "jasa1.csv")
R = pd.read_csv(DATA / "r_residuals_cut_points.csv.gz", keep_default_na=False)
R_TERMS = {"fin1": "fin[0,20)", "fin2": "fin[20,inf)", "age1": "age[0,100)",
           "age2": "age[100,inf)"}


def r_values(case, kind, names):
    """R's residuals of ``case``: a vector, or a frame with the engine's column names."""
    rows = R[(R["case"] == case) & (R["kind"] == kind)]
    if rows["term"].eq("").all():
        return rows.sort_values("row")["value"].to_numpy()
    wide = rows.pivot(index="row", columns="term", values="value").rename(columns=R_TERMS)
    return wide[names].to_numpy()


def rossi_fit(ties, strata=None):
    cohort = engine.Cohort.from_frame(ROSSI, "week", "arrest", covariates=["fin", "age", "prio"],
                                      strata=strata)
    return engine.fit(cohort, ties=ties, cut_points={"fin": [20]}), cohort


def jasa1_fit():
    cohort = engine.Cohort.from_frame(JASA1, "stop", "event", start="start", id="id",
                                      covariates=["age", "transplant", "surgery"])
    return engine.fit(cohort, ties="efron", cut_points={"age": [100]}), cohort


ALL = ("martingale", "deviance", "score", "dfbeta")
CASES = {
    "rossi efron": (lambda: rossi_fit("efron"), ALL),
    "rossi breslow": (lambda: rossi_fit("breslow"), ("martingale", "dfbeta")),
    "rossi strata": (lambda: rossi_fit("efron", "wexp"), ("martingale", "score")),
    "jasa1 entry": (jasa1_fit, ALL),
}


@pytest.mark.parametrize("case", list(CASES))
def test_residuals_of_cut_point_fits_against_R(case):
    """fin's coefficient before and after week 20 (Breslow and Efron ties, strata of its
    own), and jasa1's age before and after day 100 on (start, stop] rows with entry times and
    several rows a patient: one residual a row of the cohort fitted, its episodes summed."""
    make, kinds = CASES[case]
    res, cohort = make()
    names = list(res.coef.index)
    for kind in kinds:
        ours = engine.residuals(res, kind)
        assert len(ours) == cohort.n
        np.testing.assert_allclose(np.asarray(ours), r_values(case, kind, names), rtol=1e-6,
                                   atol=1e-9, err_msg=f"{case} {kind}")
        if kind in ("score", "dfbeta"):
            assert list(ours.columns) == names
        # the cohort given explicitly is the same as the one the fit keeps
        np.testing.assert_array_equal(np.asarray(engine.residuals(res, kind, cohort)),
                                      np.asarray(ours))


def test_martingale_residuals_of_a_cut_point_fit_sum_to_zero_and_score_to_the_gradient():
    """The definitions, independent of R: martingale residuals sum to zero (one event each,
    as many expected), and score residuals to the gradient of the log partial likelihood of
    the episodes the fit ran on, at its estimate."""
    res, _ = rossi_fit("efron")
    assert engine.residuals(res).sum() == pytest.approx(0.0, abs=1e-9)
    gradient = engine.gradient(res.problem.cohort, res.coef.to_numpy(), ties="efron")
    score = engine.residuals(res, "score")
    # at the estimate the sums cancel to ~1e-7 from terms summing to ~10^2 in absolute value:
    # the two summation orders may part by a few rounding errors of those (1.2e-12 of 666 on
    # an AMD EPYC), so the allowance is 1e-13 of each column's absolute sum
    slack = 1e-8 * np.abs(gradient) + 1e-13 * np.abs(score).sum().to_numpy()
    assert np.all(np.abs(score.sum().to_numpy() - gradient) <= slack)
