"""engine.ph_smooth (R's plot.cox.zph smooth of beta(t)) against the same least-squares smooth
computed here with patsy's natural cubic regression spline basis (another basis of the same
space, so the same fitted values) and lifelines' coefficient variance for the band."""

import numpy as np
import pytest
from lifelines import CoxPHFitter
from patsy import dmatrix

import engine

NAMES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def rossi_fit(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    return engine.fit(cohort, ties="efron")


@pytest.mark.parametrize("df", [3, 4, 5])
def test_smooth_and_band_against_patsy_and_lifelines(rossi, rossi_fit, df):
    smooth = engine.ph_smooth(rossi_fit, df=df)
    resid = engine.scaled_schoenfeld(rossi_fit)
    g = resid["g"].to_numpy()
    grid = np.linspace(g.min(), g.max(), 40)
    pooled = np.r_[grid, g]
    knots = np.quantile(pooled, np.linspace(0, 1, df)[1:-1])   # R's ns(): quantile knots
    basis = np.asarray(dmatrix("cr(x, knots=k, lower_bound=lo, upper_bound=hi) - 1",
                               {"x": pooled, "k": knots, "lo": pooled.min(),
                                "hi": pooled.max()}))
    P, X = basis[:40], basis[40:]
    cph = CoxPHFitter().fit(rossi[["week", "arrest", *NAMES]], "week", "arrest")
    d = int(rossi["arrest"].sum())
    for name in NAMES:
        mine = smooth[smooth["covariate"] == name]
        yhat = P @ np.linalg.lstsq(X, resid[name].to_numpy(), rcond=None)[0]
        np.testing.assert_allclose(mine["beta"], yhat, rtol=1e-8, atol=1e-10)
        seval = np.einsum("ij,jk,ik->i", P, np.linalg.inv(X.T @ X), P)
        half = 2 * np.sqrt(d * cph.variance_matrix_.loc[name, name] * seval)
        np.testing.assert_allclose(mine["upper"] - mine["beta"], half, rtol=1e-5)
        np.testing.assert_allclose(mine["beta"] - mine["lower"], half, rtol=1e-5)
    assert smooth["time"].iloc[0] == pytest.approx(resid["time"].min())
    assert smooth["time"].iloc[39] == pytest.approx(resid["time"].max())


def test_a_flat_coefficient_has_a_flat_smooth_near_beta(rossi_fit):
    """fin passes the PH test (p 0.80): its smooth stays within its band of beta-hat."""
    smooth = engine.ph_smooth(rossi_fit)
    fin = smooth[smooth["covariate"] == "fin"]
    beta = rossi_fit.coef["fin"]
    assert ((fin["lower"] < beta) & (beta < fin["upper"])).all()


def test_bad_arguments(rossi_fit):
    with pytest.raises(ValueError, match="df must be an integer >= 2"):
        engine.ph_smooth(rossi_fit, df=1)
    with pytest.raises(ValueError, match="points"):
        engine.ph_smooth(rossi_fit, points=1)
