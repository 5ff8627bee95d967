"""Predictive performance (engine.prediction: Uno's C, time-dependent AUC, Brier and
integrated Brier scores, calibration table) against scikit-survival's metrics to 1e-8 and, for
the calibration table, lifelines' Kaplan-Meier by decile."""
import numpy as np
import pytest
from lifelines import KaplanMeierFitter
from sksurv.metrics import (brier_score, concordance_index_ipcw, cumulative_dynamic_auc,
                            integrated_brier_score)
from sksurv.util import Surv

import engine

NAMES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
TIMES = [8.0, 17.0, 26.0, 39.0, 47.0]


@pytest.fixture(scope="module")
def split(rossi):
    # follow-up cut at week 50 (events at 50 censored): the censoring distribution then stays
    # positive at every event time, which scikit-survival requires
    data = rossi.assign(week=rossi["week"].clip(upper=50),
                        arrest=rossi["arrest"] * (rossi["week"] < 50))
    train, test = data.iloc[:300], data.iloc[300:]
    cohort = engine.Cohort.from_frame(train, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    lp = res.predict(test, type="lp")["fit"].to_numpy()
    surv = (res.predict_survival(test, times=TIMES)["survival"].to_numpy()
            .reshape(len(test), len(TIMES)))
    y_train = Surv.from_arrays(train["arrest"] == 1, train["week"].astype(float))
    y_test = Surv.from_arrays(test["arrest"] == 1, test["week"].astype(float))
    mine = dict(time=test["week"].to_numpy(float), event=test["arrest"].to_numpy(),
                train=(train["week"].to_numpy(float), train["arrest"].to_numpy()))
    return res, lp, surv, y_train, y_test, mine


@pytest.mark.parametrize("tau", [None, 30.0])
def test_uno_against_sksurv(split, tau):
    _, lp, _, y_train, y_test, d = split
    want = concordance_index_ipcw(y_train, y_test, lp, tau=tau)[0]
    got = engine.uno_concordance(d["time"], d["event"], lp, train=d["train"], tau=tau)
    assert got == pytest.approx(want, rel=1e-8, abs=1e-12)


def test_uno_with_tied_risks_and_own_censoring(rossi):
    risk = rossi["prio"].to_numpy(float)          # many ties
    y = Surv.from_arrays(rossi["arrest"] == 1, rossi["week"].astype(float))
    want = concordance_index_ipcw(y, y, risk, tau=50.0)[0]
    got = engine.uno_concordance(rossi["week"], rossi["arrest"], risk, tau=50.0)
    assert got == pytest.approx(want, rel=1e-8)


def test_time_dependent_auc_against_sksurv(split):
    _, lp, surv, y_train, y_test, d = split
    for risk in (lp, 1.0 - surv):
        want_auc, want_mean = cumulative_dynamic_auc(y_train, y_test, risk, TIMES)
        auc, mean = engine.time_dependent_auc(d["time"], d["event"], risk, TIMES,
                                              train=d["train"])
        np.testing.assert_allclose(auc, want_auc, rtol=1e-8)
        assert mean == pytest.approx(want_mean, rel=1e-8)
    auc, mean = engine.time_dependent_auc(d["time"], d["event"], lp, [20.0], train=d["train"])
    assert mean == pytest.approx(cumulative_dynamic_auc(y_train, y_test, lp, [20.0])[1],
                                 rel=1e-8)


def test_brier_and_integrated_against_sksurv(split):
    _, _, surv, y_train, y_test, d = split
    _, want = brier_score(y_train, y_test, surv, TIMES)
    got = engine.brier_score(d["time"], d["event"], surv, TIMES, train=d["train"])
    np.testing.assert_allclose(got, want, rtol=1e-8)
    want = integrated_brier_score(y_train, y_test, surv, TIMES)
    got = engine.integrated_brier_score(d["time"], d["event"], surv, TIMES, train=d["train"])
    assert got == pytest.approx(want, rel=1e-8)


def test_metrics_on_lung_against_sksurv():
    lung = engine.datasets.load_lung().dropna(subset=["ph.ecog"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["age", "sex",
                                                                          "ph.ecog"])
    res = engine.fit(cohort, ties="efron")
    times = [90.0, 180.0, 365.0, 540.0]
    surv = res.predict_survival(lung, times=times)["survival"].to_numpy().reshape(-1, 4)
    lp = res.predict(lung)["fit"].to_numpy()
    y = Surv.from_arrays(lung["status"] == 1, lung["time"].astype(float))
    t, e = lung["time"].to_numpy(float), lung["status"].to_numpy()
    assert engine.uno_concordance(t, e, lp, tau=700.0) == pytest.approx(
        concordance_index_ipcw(y, y, lp, tau=700.0)[0], rel=1e-8)
    np.testing.assert_allclose(engine.time_dependent_auc(t, e, lp, times)[0],
                               cumulative_dynamic_auc(y, y, lp, times)[0], rtol=1e-8)
    np.testing.assert_allclose(engine.brier_score(t, e, surv, times),
                               brier_score(y, y, surv, times)[1], rtol=1e-8)


def test_calibration_table_by_definition(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    table = engine.calibration_table(res, 30.0, groups=10)
    risk = 1 - res.predict_survival(rossi, times=[30.0])["survival"].to_numpy()
    order = np.argsort(risk, kind="mergesort")
    group = np.empty(len(risk), int)
    group[order] = np.arange(len(risk)) * 10 // len(risk)
    for g, row in table.iterrows():
        inside = group == g
        km = KaplanMeierFitter().fit(rossi["week"][inside], rossi["arrest"][inside])
        assert row["n"] == inside.sum()
        assert row["predicted"] == pytest.approx(risk[inside].mean(), rel=1e-12)
        assert row["observed"] == pytest.approx(1 - km.predict(30.0), rel=1e-12, abs=1e-15)
    assert table["predicted"].is_monotonic_increasing


def test_bad_input():
    with pytest.raises(ValueError, match="1-d arrays of one length"):
        engine.uno_concordance([1, 2, 3], [1, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="no events"):
        engine.uno_concordance([1, 2, 3], [0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="missing or infinite values at rows \\[2\\]"):
        engine.brier_score([1, np.nan, 3], [1, 0, 1], np.ones((3, 1)), [2.0])
    with pytest.raises(ValueError, match="times must lie in"):
        engine.time_dependent_auc([1, 2, 3, 4], [1, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], [5.0])
    with pytest.raises(ValueError, match="after the last time"):
        engine.uno_concordance([1, 2, 9], [1, 1, 1], [0.3, 0.2, 0.1],
                               train=(np.array([1.0, 2.0, 3.0]), np.array([1, 0, 1])))
    with pytest.raises(ValueError, match="at least two times"):
        engine.integrated_brier_score([1, 2, 3], [1, 0, 1], np.ones((3, 1)), [2.0])


def test_predictive_performance_on_held_out_data(split, rossi):
    res, lp, surv, y_train, y_test, d = split
    data = rossi.assign(week=rossi["week"].clip(upper=50),
                        arrest=rossi["arrest"] * (rossi["week"] < 50))
    held_out = engine.Cohort.from_frame(data.iloc[300:], "week", "arrest", covariates=NAMES)
    out = engine.predictive_performance(res, TIMES, cohort=held_out, tau=45.0)
    lp_zero = data.iloc[300:][NAMES].to_numpy(float) @ res.coef.to_numpy()
    assert out.summary["uno_c"] == pytest.approx(
        concordance_index_ipcw(y_train, y_test, lp_zero, tau=45.0)[0], rel=1e-8)
    auc, mean = cumulative_dynamic_auc(y_train, y_test, lp_zero, TIMES)
    np.testing.assert_allclose(out.by_time["auc"], auc, rtol=1e-8)
    assert out.summary["mean_auc"] == pytest.approx(mean, rel=1e-8)
    np.testing.assert_allclose(out.by_time["brier"], brier_score(y_train, y_test, surv,
                                                                 TIMES)[1], rtol=1e-8)
    assert out.summary["integrated_brier"] == pytest.approx(
        integrated_brier_score(y_train, y_test, surv, TIMES), rel=1e-8)
