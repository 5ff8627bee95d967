"""Predicted cumulative incidence of Fine-Gray fits (res.predict_cif) against the risk sets of
Fine & Gray (1999) written out row by row, with the censoring Kaplan-Meier from lifelines, and
against the fit's own log pseudo-likelihood (which the fit's kernels, tested against cmprsk,
compute from the same denominators)."""
import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter

import engine
from engine.regression.fine_gray_cif import subdistribution_hazard


@pytest.fixture(scope="module")
def bmt():
    data = engine.datasets.load_bmtcrr()
    data = data.assign(male=(data["Sex"] == "M").astype(int))
    cohort = engine.Cohort.from_frame(data, "ftime", "Status", covariates=["Age", "male"],
                                      competing_risks=True)
    return data, cohort, engine.fit(cohort, model="fine_gray", cause=1)


def _by_definition(data, beta, cause=1):
    """(times, jumps) of the baseline subdistribution hazard, each risk set written out."""
    t = data["ftime"].to_numpy(float)
    code = data["Status"].to_numpy()
    x = data[["Age", "male"]].to_numpy(float)
    r = np.exp(x @ beta)
    km = KaplanMeierFitter().fit(t, code == 0)        # the censoring distribution

    def G_left(u):
        before = km.survival_function_.index < u
        return km.survival_function_.iloc[:, 0][before].iloc[-1] if before.any() else 1.0

    times = np.unique(t[code == cause])
    jumps = []
    for u in times:
        den = r[t >= u].sum()
        for j in np.flatnonzero((t < u) & (code > 0) & (code != cause)):
            den += r[j] * G_left(u) / G_left(t[j])
        jumps.append(np.sum(code[t == u] == cause) / den)
    return times, np.array(jumps)


def test_baseline_by_definition(bmt):
    data, cohort, res = bmt
    times, jumps, _ = subdistribution_hazard(res)
    want_t, want_j = _by_definition(data, res.coef.to_numpy())
    np.testing.assert_allclose(times[0], want_t, rtol=0)
    np.testing.assert_allclose(jumps[0], want_j, rtol=1e-12)


def test_denominators_give_the_fits_loglik(bmt):
    data, cohort, res = bmt
    times, jumps, _ = subdistribution_hazard(res)
    eta = data[["Age", "male"]].to_numpy(float) @ res.coef.to_numpy()
    t, code = data["ftime"].to_numpy(float), data["Status"].to_numpy()
    W = np.array([np.sum((t == u) & (code == 1)) for u in times[0]])
    loglik = eta[code == 1].sum() - np.sum(W * np.log(W / jumps[0]))
    assert loglik == pytest.approx(res.loglik, rel=1e-10)


def test_predict_cif(bmt):
    data, cohort, res = bmt
    times, jumps, last = subdistribution_hazard(res)
    newdata = pd.DataFrame({"Age": [20.0, 45.0], "male": [0, 1]}, index=["a", "b"])
    grid = [1.0, 5.0, 12.0, 30.0]
    out = res.predict_cif(newdata, times=grid)
    assert list(out["row"]) == ["a"] * 4 + ["b"] * 4
    for k, (_, row) in enumerate(newdata.iterrows()):
        L = np.array([jumps[0][times[0] <= g].sum() for g in grid])
        want = 1 - np.exp(-np.exp(row.to_numpy(float) @ res.coef.to_numpy()) * L)
        np.testing.assert_allclose(out["cif"].iloc[4 * k:4 * k + 4], want, rtol=1e-12)
    with pytest.warns(engine.DataWarning, match="after the last follow-up"):
        late = res.predict_cif(newdata.iloc[:1], times=[1.0, last[0] + 1])
    assert np.isnan(late["cif"].iloc[1])
    with pytest.raises(ValueError, match="Fine-Gray fits"):
        engine.fit(engine.Cohort.from_frame(data.assign(dead=(data["Status"] > 0).astype(int)),
                                            "ftime", "dead", covariates=["Age"])).predict_cif(
            newdata)
    with pytest.raises(engine.CohortError, match="lacks the column"):
        res.predict_cif(newdata[["Age"]])


def test_adjusted_cumulative_incidence(bmt):
    data, cohort, res = bmt
    grid = [2.0, 10.0, 40.0]
    out = engine.adjusted_curves(res, "male", grid)
    for a in (0, 1):
        cif = res.predict_cif(data[["Age"]].assign(male=a), times=grid)["cif"]
        want = cif.to_numpy().reshape(len(data), 3).mean(axis=0)
        np.testing.assert_allclose(out.curves[out.curves["level"] == a]["cif"], want,
                                   rtol=1e-12)
    np.testing.assert_allclose(out.contrasts["difference"],
                               out.curves["cif"].iloc[3:].to_numpy()
                               - out.curves["cif"].iloc[:3].to_numpy(), rtol=1e-12)
    assert out.curves["se"].isna().all()
    with pytest.raises(ValueError, match="rmst_tau is for Cox"):
        engine.adjusted_curves(res, "male", grid, rmst_tau=10.0)
