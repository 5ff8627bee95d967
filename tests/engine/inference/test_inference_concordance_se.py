"""The standard error of Harrell's C (engine.concordance's "se") against R's printed
summary(coxph) and the infinitesimal jackknife written out: the derivative of C in each case
weight, by central differences of the pair-by-pair definition."""
import numpy as np
import pandas as pd
import pytest

import engine

NAMES = ["fin", "age", "prio"]


def test_lung_against_r():
    # R: summary(coxph(Surv(time, status) ~ age + sex + ph.ecog, data = lung)) prints
    # "Concordance= 0.637  (se = 0.025 )"
    cohort = engine.Cohort.from_frame(engine.datasets.load_lung(), "time", "status",
                                      covariates=["age", "sex", "ph.ecog"], missing="drop")
    out = engine.concordance(engine.fit(cohort, ties="efron"))
    assert abs(out["concordance"] - 0.637) <= 5e-4
    assert abs(out["se"] - 0.025) <= 5e-4


def _c_index(start, stop, event, w, strata, eta):
    """C by the pair-by-pair definition (as tests/test_concordance.py)."""
    counts = np.zeros(3)
    for i in np.flatnonzero(event):
        t = stop[i]
        at_risk = (start < t) & (t <= stop) & (strata == strata[i]) & ~(event & (stop == t))
        counts[0] += w[i] * (w * at_risk * (eta[i] > eta)).sum()
        counts[1] += w[i] * (w * at_risk * (eta[i] < eta)).sum()
        counts[2] += w[i] * (w * at_risk * (eta[i] == eta)).sum()
    return (counts[0] + counts[2] / 2) / counts.sum()


@pytest.mark.parametrize("names", [NAMES, ["fin", "prio"]])   # the second: many tied eta
def test_infinitesimal_jackknife_by_definition(rossi, names):
    data = rossi.iloc[:100]
    rows = []
    for i, r in data.iterrows():
        bounds = [0, *[c for c in (15, 35) if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "race": r["race"], "fin": r["fin"],
                         "age": r["age"], "prio": r["prio"],
                         "arrest": int(r["arrest"] and b == r["week"]), "w": 1 + i % 3})
    split = pd.DataFrame(rows)
    cohort = engine.Cohort.from_frame(split, "stop", "arrest", covariates=names, start="start",
                                      id="id", strata="race", weights="w")
    res = engine.fit(cohort, ties="breslow")
    mine = engine.concordance(res)
    eta = split[names].to_numpy(float) @ res.coef.to_numpy()
    args = (split["start"].to_numpy(float), split["stop"].to_numpy(float),
            split["arrest"].to_numpy() == 1)
    w = split["w"].to_numpy(float)
    strata = split["race"].to_numpy()
    assert mine["concordance"] == pytest.approx(_c_index(*args, w, strata, eta), rel=1e-12)
    h = 1e-5
    dfbeta = np.empty(len(w))       # w_i dC/dw_i
    for i in range(len(w)):
        up, down = w.copy(), w.copy()
        up[i] += h * w[i]
        down[i] -= h * w[i]
        dfbeta[i] = (_c_index(*args, up, strata, eta)
                     - _c_index(*args, down, strata, eta)) / (2 * h)
    assert mine["se"] == pytest.approx(np.sqrt(np.sum(dfbeta ** 2)), rel=1e-7)


def test_a_clustered_fits_se_is_the_grouped_jackknife_of_r(rossi):
    """R 4.2.2 / survival 3.5-3 on rossi split at week 20 (survSplit), Efron, strata(race):
    concordance(coxph(Surv(tstart, week, arrest) ~ fin + age + prio + strata(race), sp,
    cluster = site)) sums each row's influence within its site: se 0.0291763236, against
    0.0289538391 unclustered (with id = id too: an id alone does not group); with
    weights = w besides, 0.0334535487."""
    rows = []
    for i, r in rossi.reset_index(drop=True).iterrows():
        pieces = [(0.0, min(r["week"], 20.0))] + ([(20.0, r["week"])] if r["week"] > 20 else [])
        for k, (a, b) in enumerate(pieces):
            rows.append({"id": i + 1, "tstart": a, "week": b, "fin": r["fin"], "age": r["age"],
                         "prio": r["prio"], "race": r["race"],
                         "arrest": r["arrest"] if k == len(pieces) - 1 else 0})
    sp = pd.DataFrame(rows).assign(site=lambda d: (d["id"] - 1) % 25,
                                   w=lambda d: 0.5 + ((d["id"] - 1) % 7) / 4)
    cohort = engine.Cohort.from_frame(sp, "week", "arrest", covariates=NAMES, strata="race",
                                      start="tstart", id="id")
    plain = engine.concordance(engine.fit(cohort, ties="efron", tol=1e-12))
    clustered = engine.concordance(engine.fit(cohort, ties="efron", tol=1e-12,
                                              cluster=sp["site"]))
    assert plain["se"] == pytest.approx(0.0289538391, rel=1e-7)
    assert clustered["se"] == pytest.approx(0.0291763236, rel=1e-7)
    assert clustered["concordance"] == pytest.approx(0.6253727377, rel=1e-9)
    weighted = engine.Cohort.from_frame(sp, "week", "arrest", covariates=NAMES, strata="race",
                                        start="tstart", id="id", weights="w")
    out = engine.concordance(engine.fit(weighted, ties="efron", tol=1e-12, cluster=sp["site"]))
    assert out["se"] == pytest.approx(0.0334535487, rel=1e-7)
