"""engine.kaplan_meier(start_time=): curves conditional on being event-free at a time, against
R's survfit(start.time=) printed by tests/data/r_km_start_time.R (R 4.2.2, survival 3.5-3)
to 15 digits: survival, standard errors and limits at chosen times, and the restricted mean
(from 0, as R's print(survfit, rmean=))."""

import numpy as np
import pytest

import engine
from r_printed import data_frame, sections
from rossi_episodes import survsplit

R = sections("r_km_start_time.Rout")


@pytest.fixture(scope="module")
def rossi(rossi_r_weights):
    return rossi_r_weights


def _as_r(km, label, rmean_se=True):
    want = data_frame(R[label])
    got = km.at([30, 52], conf_type="log")
    np.testing.assert_allclose(got["at_risk"], want["n.risk"], rtol=1e-12)
    np.testing.assert_allclose(got["events"], want["n.event"], rtol=1e-12)
    for ours, theirs in (("survival", "surv"), ("std_err", "std.err"), ("lower", "lower"),
                         ("upper", "upper")):
        np.testing.assert_allclose(got[ours], want[theirs], rtol=1e-9)
    means = data_frame(R[f"{label} rmean"])
    rmst = km.rmst(52)
    np.testing.assert_allclose(rmst["rmst"], means["rmean"], rtol=1e-12)
    if rmean_se:
        np.testing.assert_allclose(rmst["se"], means["se"], rtol=1e-9)


def test_conditional_on_week_20_as_R(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    km = engine.kaplan_meier(cohort, by=rossi["fin"].to_numpy(), start_time=20)
    _as_r(km, "rossi from 20")
    # S(t) / S(20-) of the whole curve: the arrests at week 20 count
    whole = engine.kaplan_meier(cohort, by=rossi["fin"].to_numpy())
    before = whole.at([19.5])["survival"].to_numpy()
    np.testing.assert_allclose(km.at([52])["survival"],
                               whole.at([52])["survival"].to_numpy() / before, rtol=1e-12)


def test_weighted_conditional_as_R(rossi):
    """Weights that are not whole numbers: the robust variance of the rows followed to week 20
    (R's print(rmean=) keeps Greenwood's terms for the RMST's SE: not compared)."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    km = engine.kaplan_meier(cohort, by=rossi["fin"].to_numpy(), start_time=20)
    assert km.variance == "robust by row"
    _as_r(km, "rossi weighted from 20", rmean_se=False)


def test_episodes_by_id_conditional_as_R(rossi):
    split = survsplit(rossi, [20])
    cohort = engine.Cohort.from_frame(split, "week", "arrest", covariates=[], start="start",
                                      id="id")
    km = engine.kaplan_meier(cohort, by=split["fin"].to_numpy(), start_time=25)
    _as_r(km, "rossi split by id from 25")


def test_bad_start_times(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    with pytest.raises(ValueError, match="no row is followed to start_time=60"):
        engine.kaplan_meier(cohort, start_time=60)
    for bad in ("20", np.nan, True):
        with pytest.raises(ValueError, match="start_time must be a number"):
            engine.kaplan_meier(cohort, start_time=bad)
