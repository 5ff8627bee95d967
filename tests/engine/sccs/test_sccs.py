"""The self-controlled case series (Suchard2013): SccsData and the conditional Poisson fit against
statsmodels' ConditionalPoisson, a brute-force conditional likelihood, a fixed-effects Poisson
GLM, a day-by-day expansion of R SCCS's itpdat and gidat, and the KKT conditions."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import engine
from engine import CohortError, SccsData

sm = pytest.importorskip("statsmodels.api")
from statsmodels.discrete.conditional_models import ConditionalPoisson  # noqa: E402

from sccs_oracles import (AGE_CUTS, brute_gradient, brute_loglik, day_by_day,  # noqa: E402
                          read, simulated)

@pytest.fixture(scope="module")
def itp():
    return SccsData.from_cases(read("itpdat"), case="case", obs_start="sta", obs_end="end",
                               event_times="itp", exposure_start=["mmr"],
                               risk_windows={"mmr": [(0, 42)]}, age_cuts=AGE_CUTS)


def statsmodels_fit(sccs):
    f = sccs.to_frame()
    model = ConditionalPoisson(f["events"], f[sccs.names], groups=f["case"],
                               offset=np.log(f["length"]))
    return model, model.fit(method="newton", maxiter=100, tol=1e-14, disp=0)


# -- the fit against its oracles -----------------------------------------------------------
def test_itpdat_against_statsmodels_conditional_poisson(itp):
    res = engine.fit(itp, model="sccs")
    model, ref = statsmodels_fit(itp)
    assert res.converged
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    assert res.loglik == pytest.approx(ref.llf, rel=1e-9)
    assert res.loglik == pytest.approx(model.loglike(res.coef.to_numpy()), rel=1e-12)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse.to_numpy(), rtol=1e-6)
    summary = res.summary
    assert list(summary.columns[:5]) == ["coef", "irr", "se", "irr_lower", "irr_upper"]
    np.testing.assert_allclose(summary["irr"], np.exp(ref.params), rtol=1e-6)
    printed = str(res)
    assert f"log conditional likelihood = {ref.llf:.6f}" in printed and "ties" not in printed


def test_brute_force_likelihood_and_gradient():
    case, length, y, X = simulated(1)
    sccs = SccsData.from_arrays(case=case, length=length, events=y, X=sp.csc_matrix(X))
    beta = np.array([0.3, -0.2, 0.5, 0.1, -0.4])
    assert engine.loglik(sccs, beta, model="sccs") == pytest.approx(
        brute_loglik(case, length, y, X, beta), rel=1e-12)
    np.testing.assert_allclose(engine.gradient(sccs, beta, model="sccs"),
                               brute_gradient(case, length, y, X, beta), rtol=1e-10, atol=1e-10)
    res = engine.fit(sccs, model="sccs")
    best = optimize.minimize(lambda b: -brute_loglik(case, length, y, X, b), np.zeros(5),
                             jac=lambda b: -brute_gradient(case, length, y, X, b),
                             method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(res.coef.to_numpy(), best.x, rtol=1e-6, atol=1e-8)
    assert res.loglik == pytest.approx(-best.fun, rel=1e-10)


def test_equals_fixed_effects_poisson_glm():
    """The conditional likelihood's maximiser is the Poisson GLM's with one intercept a case."""
    case, length, y, X = simulated(2, n_cases=30)
    sccs = SccsData.from_arrays(case=case, length=length, events=y, X=X,
                                names=[f"d{j}" for j in range(5)])
    res = engine.fit(sccs, model="sccs")
    dummies = pd.get_dummies(pd.Series(case), dtype=float).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # statsmodels' perfect-separation notes for 0 cases
        glm = sm.GLM(y, np.column_stack([X, dummies]), family=sm.families.Poisson(),
                     offset=np.log(length)).fit(tol=1e-14)
    np.testing.assert_allclose(res.coef.to_numpy(), glm.params[:5], rtol=1e-6, atol=1e-9)


def test_solvers_reach_one_optimum(itp):
    ref = engine.fit(itp, model="sccs").coef.to_numpy()
    for solver in ("ccd", "newton", "prox_newton"):
        got = engine.fit(itp, model="sccs", solver=solver, tol=1e-12).coef.to_numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("penalty", [engine.L1(4.0), engine.L2(3.0)])
def test_penalised_fit_meets_kkt(penalty, solver):
    case, length, y, X = simulated(3, n_cases=80, p=8)
    names = [f"d{j}" for j in range(8)]
    sccs = SccsData.from_arrays(case=case, length=length, events=y, X=X, names=names)
    res = engine.fit(sccs, model="sccs", penalty=penalty, unpenalized=["d0"], solver=solver,
                     tol=1e-12)
    b = res.coef.to_numpy()
    g = brute_gradient(case, length, y, X, b)
    lam1 = np.full(8, penalty.l1)
    lam2 = np.full(8, penalty.l2)
    lam1[0] = lam2[0] = 0.0
    G = g - lam2 * b                                       # gradient of l - L2 part
    nonzero = b != 0
    np.testing.assert_allclose(G[nonzero], lam1[nonzero] * np.sign(b[nonzero]), atol=1e-6)
    assert np.all(np.abs(G[~nonzero]) <= lam1[~nonzero] + 1e-6)
    if isinstance(penalty, engine.L1):
        assert (~nonzero).any()                             # the penalty zeroes some drugs


def test_profile_interval_is_the_likelihood_ratio_interval(itp):
    res = engine.fit(itp, model="sccs")
    ci = res.confint("mmr[0,42]")
    f = itp.to_frame()
    case, length, y = f["case"].to_numpy(), f["length"].to_numpy(), f["events"].to_numpy()
    X = itp.X.toarray()

    def profile(b0):
        def nll(rest):
            return -brute_loglik(case, length, y, X, np.concatenate([[b0], rest]))
        return -optimize.minimize(nll, res.coef.to_numpy()[1:], method="BFGS",
                                  options={"gtol": 1e-9}).fun

    crit = stats.chi2.ppf(0.95, 1) / 2.0
    for end in ci.loc["mmr[0,42]"]:
        assert res.loglik - profile(end) == pytest.approx(crit, abs=1e-5)
    assert ci.loc["mmr[0,42]", "lower"] < res.coef["mmr[0,42]"] < ci.loc["mmr[0,42]", "upper"]


# -- from_cases: eras built as R SCCS formatdata -------------------------------------------
def test_itpdat_eras_equal_the_day_by_day_data(itp):
    daily = day_by_day(read("itpdat"), "case", "sta", "end", "itp",
                       {"mmr[0,42]": ("mmr", None, 0, 42)}, AGE_CUTS)
    eras = itp.to_frame()
    key = ["case", *itp.names]
    by_day = daily.groupby(key)[["length", "events"]].sum()
    by_era = eras.groupby(key)[["length", "events"]].sum()
    pd.testing.assert_frame_equal(by_era.sort_index(), by_day.sort_index(), check_dtype=False)
    m = ConditionalPoisson(daily["events"], daily[itp.names], groups=daily["case"])
    ref = m.fit(method="newton", maxiter=100, tol=1e-14, disp=0)
    res = engine.fit(itp, model="sccs")
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)


def test_gidat_exposure_ends_and_repeat_exposures():
    """gidat (NSAIDs, GI bleed): one row per exposure, risk from start to end inclusive."""
    gi = read("gidat")
    sccs = SccsData.from_cases(gi, case="case", obs_start="sta", obs_end="end",
                               event_times="bleed", exposure_start="ns",
                               exposure_end={"ns": "endns"})
    assert sccs.names == ["ns[0,end]"]
    assert sccs.n_events == gi.drop_duplicates(["case", "bleed"]).shape[0]
    some = gi[gi["case"].isin(gi["case"].unique()[:25])]
    daily = day_by_day(some, "case", "sta", "end", "bleed", {"ns[0,end]": ("ns", "endns", 0, 0)})
    eras = sccs.to_frame()
    eras = eras[eras["case"].isin(some["case"].unique())]
    key = ["case", "ns[0,end]"]
    pd.testing.assert_frame_equal(
        eras.groupby(key)[["length", "events"]].sum().sort_index(),
        daily.groupby(key)[["length", "events"]].sum().sort_index(), check_dtype=False)
    res = engine.fit(sccs, model="sccs")
    _, ref = statsmodels_fit(sccs)
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse.to_numpy(), rtol=1e-6)


def test_repeat_exposure_cuts_the_previous_window_and_windows_split():
    """Two doses 10 days apart with windows [0,4] and [5,20]: dose 1's second window ends the
    day before dose 2's first opens (formatdata's rule); a pre-exposure window (-3,-1)."""
    df = pd.DataFrame({"id": [1, 1], "a": [0, 0], "b": [99, 99], "t": [12, 50],
                       "dose": [20, 30]})
    sccs = SccsData.from_cases(df, case="id", obs_start="a", obs_end="b", event_times="t",
                               exposure_start="dose",
                               risk_windows={"dose": [(-3, -1), (0, 4), (5, 20)]})
    f = sccs.to_frame()
    days = {name: f.loc[f[name] == 1, "length"].sum() for name in sccs.names}
    # pre: 17-19 and 27-29 (dose 1's [5,20] window is cut at day 26: 25-26 only)
    assert days == {"dose[-3,-1]": 6, "dose[0,4]": 10, "dose[5,20]": 2 + 16}
    assert f["length"].sum() == 100 and f["events"].sum() == 2


# -- properties ----------------------------------------------------------------------------
@settings(max_examples=15)
@given(seed=st.integers(0, 10_000))
def test_case_order_does_not_matter(seed):
    case, length, y, X = simulated(seed, n_cases=25, p=3)
    perm = np.random.default_rng(seed).permutation(case.size)
    a = engine.fit(SccsData.from_arrays(case=case, length=length, events=y, X=X), model="sccs")
    b = engine.fit(SccsData.from_arrays(case=case[perm], length=length[perm], events=y[perm],
                                        X=X[perm]), model="sccs")
    np.testing.assert_allclose(a.coef.to_numpy(), b.coef.to_numpy(), rtol=1e-7, atol=1e-9)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-10)


@settings(max_examples=15)
@given(seed=st.integers(0, 10_000), cut=st.floats(0.05, 0.95))
def test_splitting_an_era_changes_nothing(seed, cut):
    """An era cut in two without a change of exposure (its events shared out) leaves the
    conditional likelihood's maximiser and maximum unchanged."""
    case, length, y, X = simulated(seed, n_cases=25, p=3)
    k = int(np.random.default_rng(seed).integers(case.size))
    first = max(1.0, np.floor(length[k] * cut))
    y_first = np.floor(y[k] * cut)
    if first >= length[k]:
        return
    idx = np.insert(np.arange(case.size), k, k)
    length2, y2 = length[idx].copy(), y[idx].copy()
    length2[k], length2[k + 1] = first, length[k] - first
    y2[k], y2[k + 1] = y_first, y[k] - y_first
    a = engine.fit(SccsData.from_arrays(case=case, length=length, events=y, X=X), model="sccs")
    b = engine.fit(SccsData.from_arrays(case=case[idx], length=length2, events=y2, X=X[idx]),
                   model="sccs")
    np.testing.assert_allclose(a.coef.to_numpy(), b.coef.to_numpy(), rtol=1e-7, atol=1e-9)
    # the multinomial log-likelihood moves by the log of how the split events were placed
    shift = y_first * np.log(first / length[k]) + (y[k] - y_first) * np.log(
        (length[k] - first) / length[k])
    assert b.loglik == pytest.approx(a.loglik + shift, rel=1e-10, abs=1e-10)


# -- validation ----------------------------------------------------------------------------
def test_bad_eras_are_named():
    df = pd.DataFrame({"case": [1, 1, 2], "len": [10.0, -1.0, 5.0], "ev": [1, 0, 1],
                       "drug": [1, 0, 1]})
    with pytest.raises(CohortError, match=r"'len'.*row 1 = -1.0"):
        SccsData.from_frame(df, case="case", length="len", events="ev", covariates=["drug"])
    df["len"] = 3.0
    df["ev"] = [0.5, 0, 1]
    with pytest.raises(CohortError, match=r"'ev'.*whole numbers"):
        SccsData.from_frame(df, case="case", length="len", events="ev", covariates=["drug"])
    with pytest.raises(CohortError, match="'dose'.*not in the data"):
        SccsData.from_frame(df, case="case", length="len", events="ev", covariates=["dose"])


def test_bad_case_histories_are_named():
    df = read("itpdat")
    bad = df.copy()
    bad.loc[3, "itp"] = 900
    with pytest.raises(CohortError, match=r"'itp'.*outside the observation.*row 3 = 900"):
        SccsData.from_cases(bad, case="case", obs_start="sta", obs_end="end",
                            event_times="itp", exposure_start="mmr",
                            risk_windows={"mmr": [(0, 42)]})
    bad = df.copy()
    bad.loc[5, "sta"] = 300          # case 5's second row disagrees with its first
    with pytest.raises(CohortError, match=r"'sta'.*differ between rows of one case"):
        SccsData.from_cases(bad, case="case", obs_start="sta", obs_end="end",
                            event_times="itp", exposure_start="mmr",
                            risk_windows={"mmr": [(0, 42)]})
    with pytest.raises(CohortError, match="no risk window"):
        SccsData.from_cases(df, case="case", obs_start="sta", obs_end="end",
                            event_times="itp", exposure_start="mmr")


def test_columns_without_within_case_contrast_are_excluded():
    df = pd.DataFrame({"case": [1, 1, 2, 2], "length": [10.0, 20, 5, 5], "events": [1, 0, 0, 2],
                       "drug": [1, 0, 0, 1], "sex": [1, 1, 0, 0]})
    with pytest.warns(engine.DataWarning, match="'sex' \\(constant within every case\\)"):
        sccs = SccsData.from_frame(df, case="case", length="length", events="events")
    assert sccs.names == ["drug"] and "sex" in sccs.excluded


def test_first_event_only_keeps_each_case_first_event():
    df = read("itpdat")
    sccs = SccsData.from_cases(df, case="case", obs_start="sta", obs_end="end",
                               event_times="itp", exposure_start="mmr",
                               risk_windows={"mmr": [(0, 42)]}, first_event_only=True)
    assert sccs.n_events == df["case"].nunique()
    first = df.loc[df.groupby("case")["itp"].idxmin()]
    daily = day_by_day(first, "case", "sta", "end", "itp", {"mmr[0,42]": ("mmr", None, 0, 42)})
    key = ["case", "mmr[0,42]"]
    pd.testing.assert_frame_equal(
        sccs.to_frame().groupby(key)[["length", "events"]].sum().sort_index(),
        daily.groupby(key)[["length", "events"]].sum().sort_index(), check_dtype=False)
    assert sccs.source["first_event_only"] and sccs.source["risk_windows"] == {"mmr": [[0, 42]]}


@settings(max_examples=25)
@given(seed=st.integers(0, 100_000))
def test_from_cases_equals_the_day_by_day_definition(seed):
    """Random histories (repeat doses, two drugs, one anchored at its end, age cuts, events
    on shared days): the eras hold exactly the days and events of the day-by-day data."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(int(rng.integers(1, 5))):
        sta = int(rng.integers(0, 50))
        end = sta + int(rng.integers(0, 120))
        doses = rng.integers(sta - 30, end + 10, size=int(rng.integers(0, 4)))
        for k in range(int(rng.integers(1, 4))):
            a = float(doses[k % doses.size]) if doses.size else np.nan
            b = float(rng.integers(sta - 20, end + 5)) if rng.random() < 0.7 else np.nan
            rows.append({"id": c, "sta": sta, "end": end, "t": int(rng.integers(sta, end + 1)),
                         "a": a, "b": b, "b_end": b + int(rng.integers(0, 15))})
    df = pd.DataFrame(rows)
    cuts = sorted(rng.choice(np.arange(10, 170), size=int(rng.integers(0, 3)), replace=False))
    windows = {"a": [(2, 9)], "b": [(0, "end+3")]}
    drugs = [d for d in ("a", "b") if df[d].notna().any()]
    if not drugs and not cuts:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", engine.DataWarning)    # e.g. an age group nobody reaches
        sccs = SccsData.from_cases(df, case="id", obs_start="sta", obs_end="end",
                                   event_times="t", exposure_start=drugs,
                                   exposure_end={"b": "b_end"} if "b" in drugs else None,
                                   risk_windows={d: windows[d] for d in drugs},
                                   age_cuts=list(cuts) or None)
    spec = {"a[2,9]": ("a", None, 2, 9), "b[0,end+3]": ("b", "b_end", 0, 3)}
    daily = day_by_day(df, "id", "sta", "end", "t",
                       {name: spec[name] for name in spec if name[0] in drugs}, list(cuts))
    key = ["case", *sccs.names]
    got = sccs.to_frame().groupby(key)[["length", "events"]].sum().sort_index()
    want = daily.groupby(key)[["length", "events"]].sum().sort_index()
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert sccs.to_frame()["length"].sum() == (df.groupby("id")["end"].first()
                                               - df.groupby("id")["sta"].first() + 1).sum()


def test_study_window_naive_period_and_ages():
    """naive_period and min/max age cut each case's observation (OHDSI's study window): the
    eras equal the day-by-day data of the cut periods, and what left is counted."""
    df = read("itpdat")
    with pytest.warns(engine.DataWarning, match="event\\(s\\) outside the study window"):
        sccs = SccsData.from_cases(df, case="case", obs_start="sta", obs_end="end",
                                   event_times="itp", exposure_start="mmr",
                                   risk_windows={"mmr": [(0, 42)]}, naive_period=30,
                                   min_age=400, max_age=700)
    cut = df.assign(sta=np.maximum(df["sta"] + 30, 400), end=np.minimum(df["end"], 700))
    cut = cut[(cut["itp"] >= cut["sta"]) & (cut["itp"] <= cut["end"])]
    daily = day_by_day(cut, "case", "sta", "end", "itp", {"mmr[0,42]": ("mmr", None, 0, 42)})
    key = ["case", "mmr[0,42]"]
    pd.testing.assert_frame_equal(
        sccs.to_frame().groupby(key)[["length", "events"]].sum().sort_index(),
        daily.groupby(key)[["length", "events"]].sum().sort_index(), check_dtype=False)
    left = sccs.source["left_out"]
    assert left["events"] == len(df) - len(cut)
    assert left["cases"] == df["case"].nunique() - cut["case"].nunique()


def test_sccs_needs_sccs_data(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=["fin"])
    with pytest.raises(CohortError, match="SccsData"):
        engine.fit(cohort, model="sccs")


def test_equals_a_stratified_cox_fit_of_the_eras():
    """With one event per case (gidat), SCCS is a Cox model stratified by case in which every
    era is a subject at risk at one common time with offset log(length), Breslow ties
    (statsmodels PHReg)."""
    sccs = SccsData.from_cases(read("gidat"), case="case", obs_start="sta", obs_end="end",
                               event_times="bleed", exposure_start="ns",
                               exposure_end={"ns": "endns"}, age_cuts=[20000, 25000])
    f = sccs.to_frame()
    assert f.groupby("case")["events"].sum().max() == 1
    ph = sm.PHReg(np.ones(len(f)), f[sccs.names], status=f["events"].to_numpy(),
                  strata=f["case"].to_numpy(), offset=np.log(f["length"].to_numpy()),
                  ties="breslow").fit(tol=1e-12)
    res = engine.fit(sccs, model="sccs")
    np.testing.assert_allclose(res.coef.to_numpy(), ph.params, rtol=1e-6)
    np.testing.assert_allclose(res.se.to_numpy(), ph.bse, rtol=1e-6)


def test_hipdat_against_statsmodels_and_days():
    """hipdat (antidepressants and hip fracture): exposure from start to end inclusive."""
    hip = read("hipdat")
    assert hip.shape == (1000, 6)
    sccs = SccsData.from_cases(hip, case="case", obs_start="sta", obs_end="end",
                               event_times="frac", exposure_start="ad",
                               exposure_end={"ad": "endad"})
    some = hip[hip["case"] <= 40]
    daily = day_by_day(some, "case", "sta", "end", "frac", {"ad[0,end]": ("ad", "endad", 0, 0)})
    eras = sccs.to_frame()
    key = ["case", "ad[0,end]"]
    pd.testing.assert_frame_equal(
        eras[eras["case"] <= 40].groupby(key)[["length", "events"]].sum().sort_index(),
        daily.groupby(key)[["length", "events"]].sum().sort_index(), check_dtype=False)
    res = engine.fit(sccs, model="sccs")
    _, ref = statsmodels_fit(sccs)
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse.to_numpy(), rtol=1e-6)


def test_an_empty_study_window_is_named():
    with pytest.raises(CohortError, match="no event falls inside the study window"):
        SccsData.from_cases(read("itpdat"), case="case", obs_start="sta", obs_end="end",
                            event_times="itp", exposure_start="mmr",
                            risk_windows={"mmr": [(0, 42)]}, min_age=800)
