"""engine.ph_test (R's cox.zph) against R's saved output, R's own analytic checks and the score
test of the extended model computed by statsmodels' PHReg.

R values: survival package (Therneau), tests/Examples/survival-Ex.Rout.save (cox.zph of
ovarian, printed to 3 decimals) and tests/zph.R (closed-form score tests on a 6-row example).
"""

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from statsmodels.duration.hazard_regression import PHReg

import engine
from r_survival_data import OVARIAN


def test_ovarian_against_R():
    # cox.zph(coxph(Surv(futime, fustat) ~ age + ecog.ps, ovarian)): 0.698, 2.371, 3.633
    cohort = engine.Cohort.from_frame(OVARIAN, "futime", "fustat", covariates=["age", "ecog_ps"])
    res = engine.fit(cohort, ties="efron")
    zph = engine.ph_test(res).table                # the FitResult keeps its cohort
    assert zph.index.tolist() == ["age", "ecog_ps", "GLOBAL"]
    np.testing.assert_allclose(zph["chisq"], [0.698, 2.371, 3.633], atol=5e-4)
    assert zph["df"].tolist() == [1, 1, 2]
    np.testing.assert_allclose(zph["p"], [0.40, 0.12, 0.16], atol=5e-3)


TEST1 = pd.DataFrame({"time": [9, 1, 1, 6, 6, 8], "status": [1, 1, 0, 1, 1, 0],
                      "x": [0, 1, 1, 1, 0, 0]})
G = np.array([1.0, 6, 6, 9])          # death times


def _closed_form(U, imat, g):
    u2 = np.array([U.sum(), (g * U).sum()])
    i2 = np.array([[imat.sum(), (g * imat).sum()], [(g * imat).sum(), (g * g * imat).sum()]])
    return u2 @ np.linalg.solve(i2, u2)


@pytest.mark.parametrize("ties, transform", [("breslow", "identity"), ("breslow", "log"),
                                             ("efron", "log")])
def test_closed_form_score_test_of_R_zph(ties, transform):
    """R's tests/zph.R: the MLE, score terms and information in closed form."""
    if ties == "breslow":
        r = (3 + np.sqrt(33)) / 2
        U = np.array([1 / (r + 1), 3 / (r + 3), -r / (r + 3), 0])
        imat = np.array([r / (r + 1) ** 2, 3 * r / (r + 3) ** 2, 3 * r / (r + 3) ** 2, 0])
    else:
        phi = np.arccos((45 / 23) * np.sqrt(3 / 23))
        r = 2 * np.sqrt(23 / 3) * np.cos(phi / 3)
        U = np.array([1 / (r + 1), 3 / (r + 3), -r / (r + 5), 0])
        imat = np.array([r / (r + 1) ** 2, 3 * r / (r + 3) ** 2, 5 * r / (r + 5) ** 2, 0])
    g = G if transform == "identity" else np.log(G) - np.log(G).mean()
    cohort = engine.Cohort.from_frame(TEST1, "time", "status", covariates=["x"])
    res = engine.fit(cohort, ties=ties)
    assert res.coef["x"] == pytest.approx(np.log(r), rel=1e-7)
    zph = engine.ph_test(res, cohort, transform=transform).table
    assert zph.loc["x", "chisq"] == pytest.approx(_closed_form(U, imat, g), rel=1e-6)
    # artificial strata: two copies, one per stratum, double the statistic
    twice = pd.concat([TEST1.assign(group="a"), TEST1.assign(group="b")], ignore_index=True)
    stratified = engine.Cohort.from_frame(twice, "time", "status", covariates=["x"],
                                          strata="group")
    res2 = engine.fit(stratified, ties=ties)
    zph2 = engine.ph_test(res2, stratified, transform=transform).table
    assert zph2.loc["x", "chisq"] == pytest.approx(2 * zph.loc["x", "chisq"], rel=1e-6)


def _extended_score_test(df, names, beta, g_of_time, ties, strata=None):
    """The score test of gamma = 0 in the Cox model with x * g(t) added, at (beta_hat, 0),
    by statsmodels' PHReg on data split at every event time (entry nudged: PHReg's entry is
    inclusive)."""
    cuts = np.unique(df.loc[df["event"] == 1, "time"])
    rows = []
    for _, r in df.iterrows():
        bounds = [0.0, *cuts[cuts < r["time"]], r["time"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({**r.to_dict(), "start": a, "stop": b,
                         "event": int(r["event"] and b == r["time"]), "g": g_of_time[b]
                         if b in g_of_time else 0.0})
    split = pd.DataFrame(rows)
    X = np.column_stack([split[names].to_numpy(float),
                         split[names].to_numpy(float) * split["g"].to_numpy()[:, None]])
    model = PHReg(split["stop"], X, status=split["event"], entry=split["start"] + 1e-7,
                  ties=ties, strata=None if strata is None else split[strata])
    params = np.concatenate([beta, np.zeros(len(names))])
    u = model.score(params)
    info = -model.hessian(params)
    p = len(names)
    u[:p] = 0.0   # zero at the MLE; cox.zph sets it to 0 exactly
    out = {}
    for j, name in enumerate(names):
        kk = np.concatenate([np.arange(p), [p + j]])
        out[name] = u[kk] @ np.linalg.solve(info[np.ix_(kk, kk)], u[kk])
    out["GLOBAL"] = u @ np.linalg.solve(info, u)
    return pd.Series(out)


@pytest.mark.parametrize("ties, strata", [("breslow", None), ("efron", None),
                                          ("efron", "race")])
def test_rossi_against_extended_model_in_statsmodels(rossi, ties, strata):
    names = ["fin", "age", "prio"] + ([] if strata else ["race"])
    df = rossi.rename(columns={"week": "time", "arrest": "event"})
    cohort = engine.Cohort.from_frame(df, "time", "event", covariates=names, strata=strata)
    res = engine.fit(cohort, ties=ties)
    zph = engine.ph_test(res, cohort).table
    # R's km transform by hand: 1 - S(t-) of the pooled KM, centred over the events
    kmf = engine.kaplan_meier(cohort).table
    before = dict(zip(kmf["time"], np.concatenate(([1.0], kmf["survival"].to_numpy()[:-1]))))
    event_g = np.array([1 - before[t] for t in df.loc[df["event"] == 1, "time"]])
    g_of_time = {t: 1 - before[t] - event_g.mean() for t in kmf["time"]}
    expected = _extended_score_test(df, names, res.coef[names].to_numpy(), g_of_time,
                                    ties, strata)
    np.testing.assert_allclose(zph["chisq"], expected[zph.index], rtol=1e-6)


def test_scaled_schoenfeld_against_lifelines(rossi):
    names = ["fin", "age", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names)
    res = engine.fit(cohort, ties="efron")
    mine = engine.scaled_schoenfeld(res, cohort).set_index("row").sort_index()
    cph = CoxPHFitter().fit(rossi[["week", "arrest", *names]], "week", "arrest")
    theirs = cph.compute_residuals(rossi[["week", "arrest", *names]], "scaled_schoenfeld")
    theirs = theirs.sort_index()
    assert mine.index.tolist() == theirs.index.tolist()
    # lifelines reports d V^-1 r_i without R's beta_hat added
    np.testing.assert_allclose(mine[names].to_numpy() - res.coef[names].to_numpy(),
                               theirs[names].to_numpy(), rtol=1e-6, atol=1e-7)  # its fit: ~1e-8


def test_text_covariate_is_one_term(rossi):
    df = rossi.assign(prio_group=pd.cut(rossi["prio"], [-1, 1, 4, 99],
                                        labels=["low", "mid", "high"]).astype(str))
    cohort = engine.Cohort.from_frame(df, "week", "arrest", covariates=["fin", "prio_group"])
    zph = engine.ph_test(engine.fit(cohort, ties="efron"), cohort).table
    assert zph.index.tolist() == ["fin", "prio_group", "GLOBAL"]
    assert zph["df"].tolist() == [1, 2, 3]


def test_refusals(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    other = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "prio"])
    res = engine.fit(cohort)
    with pytest.raises(ValueError, match="not the one fitted"):
        engine.ph_test(res, other)
    with pytest.raises(TypeError, match="Cohort"):
        engine.ph_test(res, rossi)
    with pytest.raises(ValueError, match="transform"):
        engine.ph_test(res, cohort, transform="sqrt")
    penalised = engine.fit(cohort, penalty=engine.L2(1.0))
    with pytest.raises(ValueError, match="unpenalised"):
        engine.ph_test(penalised, cohort)


def _split(rossi, cuts):
    rows = []
    for i, r in rossi.iterrows():
        bounds = [0, *[c for c in cuts if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "fin": r["fin"], "age": r["age"],
                         "prio": r["prio"], "arrest": int(r["arrest"] and b == r["week"])})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_split_episodes_give_the_unsplit_test(rossi, ties):
    """(start, stop] rows without covariate change: the same risk sets, so the same test (R's
    zph2 against zph1)."""
    names = ["fin", "age", "prio"]
    plain = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names)
    split = engine.Cohort.from_frame(_split(rossi, (10, 25, 40)), "stop", "arrest",
                                     covariates=names, start="start", id="id")
    for transform in ("km", "identity"):
        a = engine.ph_test(engine.fit(plain, ties=ties), plain, transform=transform).table
        b = engine.ph_test(engine.fit(split, ties=ties), split, transform=transform).table
        np.testing.assert_allclose(b["chisq"], a["chisq"], rtol=1e-7)


def test_integer_weights_are_repeated_rows_with_breslow(rossi):
    w = 1 + np.arange(len(rossi)) % 3
    names = ["fin", "age", "prio"]
    weighted = engine.Cohort.from_frame(rossi.assign(w=w), "week", "arrest", covariates=names,
                                        weights="w")
    repeated = engine.Cohort.from_frame(rossi.loc[rossi.index.repeat(w)].reset_index(drop=True),
                                        "week", "arrest", covariates=names)
    a = engine.ph_test(engine.fit(weighted), weighted, transform="identity").table
    b = engine.ph_test(engine.fit(repeated), repeated, transform="identity").table
    np.testing.assert_allclose(a["chisq"], b["chisq"], rtol=1e-7)


def test_a_formulas_terms_are_tested_whole_as_r_does(rossi):
    """R 4.2.2 / survival 3.5-3, cox.zph(coxph(...)) with its default terms = TRUE: a spline's
    basis is one term, as are a factor's levels; an interaction is its own term.
        Surv(week, arrest) ~ fin + ns(age, df = 3) + prio: ns 5.81270814 on 3 df, GLOBAL
        6.51489538 on 5; ~ fin * age + factor(race): age 5.952165766, fin:age 0.437650084."""
    res = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              formula="fin + ns(age, df=3) + prio"),
                     ties="efron", tol=1e-12)
    table = engine.ph_test(res).table
    assert list(table.index) == ["fin", "ns(age, df=3)", "prio", "GLOBAL"]
    np.testing.assert_allclose(table["chisq"], [0.07714903, 5.81270814, 0.46075341,
                                                6.51489538], rtol=1e-6)
    assert table["df"].tolist() == [1, 3, 1, 5]
    res = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              formula="fin * age + C(race)"),
                     ties="efron", tol=1e-12)
    table = engine.ph_test(res).table
    np.testing.assert_allclose(table.loc[["fin", "age", "C(race)", "fin:age", "GLOBAL"],
                                         "chisq"],
                               [0.009241005, 5.952165766, 1.904097854, 0.437650084,
                                9.765612860], rtol=1e-6)
