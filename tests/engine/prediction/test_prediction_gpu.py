"""Baseline hazards, predictions and adjusted curves of a fit on the GPU backend (the device,
or its kernels in the CUDA emulator) equal the same fit's on the CPU backend to 1e-8: the
increments come from the device's scan over Efron's terms, the Tsiatis variance's Q from its
column kernel over the sorted rows it holds (engine.regression.baseline).  Breslow and Efron
ties, strata, entry times and case weights; rossi's week-8 and week-20 episodes."""
import numpy as np
import pandas as pd
import pytest

import engine
from rossi_episodes import rossi_episodes

COVARIATES = ["fin", "age", "prio"]


def _fits(cohort, ties):
    return [engine.fit(cohort, ties=ties, backend=b, tol=1e-12) for b in ("cpu", "gpu")]


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_baseline_and_predictions_equal_cpu(where, rossi, ties):
    cohort = engine.Cohort.from_frame(rossi_episodes(rossi, 120), "stop", "arrest",
                                      covariates=COVARIATES, start="start", id="id",
                                      strata="race", weights="w")
    cpu, gpu = _fits(cohort, ties)
    assert gpu.baseline.device is not None and cpu.baseline.device is None
    for centered in (True, False):
        a, b = cpu.baseline_hazard(centered), gpu.baseline_hazard(centered)
        assert (a["stratum"] == b["stratum"]).all() and (a["time"] == b["time"]).all()
        for column in ("n_risk", "n_event", "hazard", "cumhaz", "survival"):
            _close(b[column], a[column], f"{column}, centered={centered}")
    for piece in ("varhaz", "tie_term", "death_hazard"):
        for s in range(2):
            _close(getattr(gpu.baseline, piece)[s], getattr(cpu.baseline, piece)[s], piece)
    newdata = pd.DataFrame({"fin": [0, 1, 1], "age": [20, 30, 41], "prio": [0, 3, 9],
                            "race": [0, 1, 1]})
    times = [3.0, 8.0, 20.0, 30.0, 49.0]
    a, b = cpu.predict_survival(newdata, times=times), gpu.predict_survival(newdata, times=times)
    for column in ("cumhaz", "se_cumhaz", "survival", "lower", "upper"):
        _close(b[column], a[column], column)
    for type_ in ("expected", "survival"):         # the fitted rows: Q over each row's episode
        a, b = cpu.predict(type=type_), gpu.predict(type=type_)
        _close(b["fit"], a["fit"], type_)
        _close(b["se"], a["se"], f"se of {type_}")
    gpu.release()            # the device's memory goes, the baseline's backend with it
    assert gpu.problem.model.backend is None and gpu.baseline.device is None
    a, b = cpu.predict_survival(newdata, times=times), gpu.predict_survival(newdata, times=times)
    _close(b["se_cumhaz"], a["se_cumhaz"], "se_cumhaz after release (on the host)")


def test_adjusted_curves_equal_cpu(where, rossi):
    data = rossi.assign(w=1.0 + np.arange(len(rossi)) % 3)
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=COVARIATES,
                                      strata="race", weights="w")
    cpu, gpu = _fits(cohort, "efron")
    times = [5.0, 10.0, 20.0, 40.0]
    a = engine.adjusted_curves(cpu, "fin", times, rmst_tau=30.0)
    b = engine.adjusted_curves(gpu, "fin", times, rmst_tau=30.0)
    for table in ("curves", "contrasts", "rmst"):
        got, want = getattr(b, table), getattr(a, table)
        numeric = want.select_dtypes("number").columns
        _close(got[numeric].to_numpy(float), want[numeric].to_numpy(float), table)


def test_zero_weights_and_a_stratum_without_events_equal_cpu(where, rossi):
    """Rows of weight 0 leave the risk sets and the events (their flags cleared on the device
    as on the host); a stratum whose rows are all censored has an empty baseline."""
    data = rossi.assign(w=(np.arange(len(rossi)) % 4).astype(float),
                        site=np.where(np.arange(len(rossi)) < 40, 2, rossi["race"]))
    data.loc[data["site"] == 2, "arrest"] = 0
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=COVARIATES,
                                      strata="site", weights="w")
    cpu, gpu = _fits(cohort, "efron")
    a, b = cpu.baseline_hazard(), gpu.baseline_hazard()
    assert len(a) == len(b) and "2" not in set(b["stratum"])
    for column in ("n_risk", "n_event", "hazard", "cumhaz"):
        _close(b[column], a[column], column)
    assert gpu.baseline.times[2].size == 0
