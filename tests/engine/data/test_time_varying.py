"""Counting-process Cox and cut-point (step-function) coefficients against R, lifelines and
statsmodels, plus the split-invariance property."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.data.episodes import episodes_from_changes, split_at_cut_points

HEART = ["age", "year", "surgery", "transplant"]


@pytest.fixture(scope="module")
def heart():
    return engine.datasets.load_stanford_heart()


def heart_cohort(df, covariates=HEART, strata=None):
    return engine.Cohort.from_frame(df, time="stop", event="event", start="start", id="id",
                                    covariates=covariates, strata=strata)


def test_stanford_heart_against_R(heart):
    """R coxph(Surv(start, stop, event) ~ age + year + surgery + transplant), Efron."""
    res = engine.fit(heart_cohort(heart), ties="efron")
    np.testing.assert_allclose(res.coef[HEART], [0.0272, -0.1463, -0.6372, -0.0103], atol=5e-5)
    np.testing.assert_allclose(res.se[HEART], [0.0137, 0.0705, 0.3672, 0.3138], atol=5e-5)


def test_stanford_heart_strata_transplant_against_R(heart):
    res = engine.fit(heart_cohort(heart, ["age", "year", "surgery"], strata="transplant"),
                     ties="efron")
    np.testing.assert_allclose(res.coef, [0.0293, -0.1527, -0.6176], atol=5e-5)
    assert res.loglik == pytest.approx(-254.7144, abs=5e-5)


def test_jasa1_breslow_interaction_against_R():
    """Kalbfleisch & Prentice's jasa1 model, R's tests/jasa.Rout.save (Breslow)."""
    df = engine.datasets.load_jasa1().assign(
        age_transplant=lambda d: d["age"] * d["transplant"])
    cols = ["age", "transplant", "surgery", "year", "age_transplant"]
    coh = engine.Cohort.from_frame(df, time="stop", event="event", start="start", id="id",
                                   covariates=cols)
    res = engine.fit(coh, ties="breslow")
    np.testing.assert_allclose(res.coef[cols], [0.01527, 0.04457, -0.62113, -0.13608, 0.02703],
                               atol=5e-6)


def test_stanford_heart_against_lifelines_time_varying(heart):
    from lifelines import CoxTimeVaryingFitter

    ctv = CoxTimeVaryingFitter().fit(heart[["id", "start", "stop", "event", *HEART]],
                                     id_col="id", event_col="event", start_col="start",
                                     stop_col="stop")
    res = engine.fit(heart_cohort(heart), ties="efron")
    np.testing.assert_allclose(res.coef[HEART], ctv.params_[HEART], rtol=1e-6)
    np.testing.assert_allclose(res.se[HEART], ctv.standard_errors_[HEART], rtol=1e-6)
    assert res.loglik == pytest.approx(ctv.log_likelihood_, rel=1e-9)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_stanford_heart_against_statsmodels(heart, ties):
    """PHReg's entry is inclusive (at risk at the entry instant): shift entries by 1e-9."""
    from statsmodels.duration.hazard_regression import PHReg

    model = PHReg(heart["stop"], heart[HEART], status=heart["event"], entry=heart["start"] + 1e-9,
                  ties=ties)
    ref = model.fit()
    for _ in range(3):  # polish to machine precision with PHReg's own score and Hessian
        ref_params = ref.params - np.linalg.solve(model.hessian(ref.params), model.score(ref.params))
        ref = type("R", (), {"params": ref_params})
    res = engine.fit(heart_cohort(heart), ties=ties)
    np.testing.assert_allclose(res.coef[HEART], ref.params, rtol=1e-6)
    assert res.loglik == pytest.approx(model.loglike(np.asarray(ref.params)), rel=1e-9)


@pytest.fixture(scope="module")
def rossi_cohort():
    df = engine.datasets.load_rossi()
    return engine.Cohort.from_frame(df, time="week", event="arrest",
                                    covariates=["fin", "age", "race", "wexp", "mar", "paro",
                                                "prio"])


def hand_split(df, cuts):
    """survSplit by hand: rossi's fin effect split at ``cuts`` (an event at a cut is earlier)."""
    rows = []
    for i, r in df.iterrows():
        edges = [0.0] + [c for c in cuts if c < r.week] + [float(r.week)]
        for k in range(len(edges) - 1):
            m = int(np.searchsorted(cuts, edges[k + 1], side="left"))
            row = {"id": i, "start": edges[k], "stop": edges[k + 1],
                   "arrest": r.arrest if k == len(edges) - 2 else 0,
                   **{c: r[c] for c in ["age", "race", "wexp", "mar", "paro", "prio"]}}
            for mm in range(len(cuts) + 1):
                row[f"fin{mm}"] = r.fin if m == mm else 0
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_cut_points_equal_hand_split_and_routes_agree(rossi_cohort, ties):
    df = engine.datasets.load_rossi()
    cuts = [10.0, 30.0]
    split = hand_split(df, cuts)
    fin_cols = ["fin0", "fin1", "fin2"]
    other = ["age", "race", "wexp", "mar", "paro", "prio"]
    hand = engine.fit(engine.Cohort.from_frame(split, time="stop", event="arrest", start="start",
                                               id="id", covariates=fin_cols + other), ties=ties)
    fits = {route: engine.fit(rossi_cohort, ties=ties, cut_points={"fin": cuts}, tv_route=route)
            for route in ("counting", "strata")}
    names = ["fin[0,10)", "fin[10,30)", "fin[30,inf)"]
    for res in fits.values():
        assert list(res.coef.index[:3]) == names
        np.testing.assert_allclose(res.coef[names], hand.coef[fin_cols], rtol=1e-7)
        np.testing.assert_allclose(res.coef[other], hand.coef[other], rtol=1e-7)
        assert res.loglik == pytest.approx(hand.loglik, rel=1e-10)
    a, b = fits["counting"], fits["strata"]
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-10, atol=1e-13)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-10)
    np.testing.assert_allclose(a.se, b.se, rtol=1e-9)


def test_cut_points_with_strata_and_penalty(rossi_cohort):
    df = engine.datasets.load_rossi()
    coh = engine.Cohort.from_frame(df, time="week", event="arrest", strata="race",
                                   covariates=["fin", "age", "wexp", "mar", "paro", "prio"])
    fits = [engine.fit(coh, ties="efron", penalty=engine.L1(2.0), unpenalized=["fin"],
                       cut_points={"fin": [20.0]}, tv_route=route)
            for route in ("counting", "strata")]
    np.testing.assert_allclose(fits[0].coef, fits[1].coef, rtol=1e-9, atol=1e-12)
    assert not fits[0].penalized[["fin[0,20)", "fin[20,inf)"]].any()
    assert fits[0].penalized["age"]


def test_event_at_cut_point_belongs_to_earlier_interval():
    df = pd.DataFrame({"time": [10.0, 12.0, 5.0, 20.0], "event": [1, 1, 0, 1],
                       "x": [1.0, 0.0, 1.0, 1.0]})
    coh = engine.Cohort.from_frame(df, time="time", event="event", covariates=["x"])
    split = split_at_cut_points(coh, {"x": [10.0]}, route="counting")
    frame = split.to_frame()
    first = frame[frame["id"] == 0]
    assert first[["start", "time", "event"]].values.tolist() == [[0.0, 10.0, 1]]
    assert first["x[0,10)"].tolist() == [1.0] and first["x[10,inf)"].tolist() == [0.0]
    last = frame[frame["id"] == 3]
    assert last[["start", "time", "event"]].values.tolist() == [[0.0, 10.0, 0], [10.0, 20.0, 1]]


def test_cut_point_errors(rossi_cohort):
    with pytest.raises(engine.CohortError, match="'nope'"):
        engine.fit(rossi_cohort, cut_points={"nope": [5]})
    with pytest.raises(engine.CohortError, match="increasing"):
        engine.fit(rossi_cohort, cut_points={"fin": [30, 10]})
    with pytest.raises(engine.CohortError, match=r"fin\[60,inf\)"):
        engine.fit(rossi_cohort, cut_points={"fin": [60]})   # follow-up ends at week 52


@settings(max_examples=40)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 30), delayed=st.booleans(),
       ties=st.sampled_from(["breslow", "efron"]))
def test_splitting_without_change_leaves_fit_unchanged(seed, n, delayed, ties):
    rng = np.random.default_rng(seed)
    stop = rng.integers(2, 9, n).astype(float)
    start = np.where(rng.random(n) < 0.5, rng.integers(0, 2, n), 0).astype(float) if delayed \
        else np.zeros(n)
    event = (rng.random(n) < 0.7).astype(int)
    event[0] = 1
    x = rng.normal(size=(n, 2))
    base = pd.DataFrame({"id": np.arange(n), "start": start, "stop": stop, "event": event,
                         "a": x[:, 0], "b": x[:, 1]})
    # split every subject at a random time strictly inside its episode
    cut = start + (stop - start) * rng.uniform(0.2, 0.8, n)
    cut = np.round(cut * 4) / 4
    inside = (cut > start) & (cut < stop)
    first = base[inside].assign(stop=cut[inside], event=0)
    second = base[inside].assign(start=cut[inside])
    split = pd.concat([base[~inside], first, second], ignore_index=True)

    def fit(df):
        coh = engine.Cohort.from_frame(df, time="stop", event="event", start="start", id="id",
                                       covariates=["a", "b"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", engine.ConvergenceWarning)
            return engine.fit(coh, ties=ties, penalty=engine.L2(0.1))

    a, b = fit(base), fit(split)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-8, atol=1e-10)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-10, abs=1e-10)


def test_episodes_from_changes():
    subjects = pd.DataFrame({"pid": [1, 2, 3], "time": [10.0, 4.0, 8.0], "event": [1, 0, 1],
                             "dose": [0.0, 1.0, 0.0], "sex": [1, 0, 1]})
    changes = pd.DataFrame({"id": [1, 1, 3, 2], "time": [3.0, 6.0, 8.0, 2.0],
                            "column": ["dose", "dose", "dose", "dose"],
                            "value": [2.0, 5.0, 9.0, 0.0]})
    ep = episodes_from_changes(subjects, changes, id="pid")
    expected = pd.DataFrame({
        "pid": [1, 1, 1, 2, 2, 3],
        "start": [0.0, 3.0, 6.0, 0.0, 2.0, 0.0],
        "stop": [3.0, 6.0, 10.0, 2.0, 4.0, 8.0],
        "event": [0, 0, 1, 0, 0, 1],
        "dose": [0.0, 2.0, 5.0, 1.0, 0.0, 0.0],   # the change at 8 = end of follow-up: no split
        "sex": [1, 1, 1, 0, 0, 1],
    })
    pd.testing.assert_frame_equal(ep.reset_index(drop=True), expected, check_dtype=False)
    coh = engine.Cohort.from_frame(ep, time="stop", event="event", start="start", id="pid",
                                   covariates=["dose", "sex"])
    assert coh.n == 6


def test_episodes_from_changes_names_bad_column():
    subjects = pd.DataFrame({"id": [1], "time": [5.0], "event": [1], "x": [0.0]})
    changes = pd.DataFrame({"id": [1], "time": [2.0], "column": ["y"], "value": [1.0]})
    with pytest.raises(engine.CohortError, match="'y'"):
        episodes_from_changes(subjects, changes)
