"""engine.concordance against lifelines' concordance_index and the pair-by-pair definition."""
import numpy as np
import pandas as pd
import pytest
from lifelines.utils import concordance_index

import engine

NAMES = ["fin", "age", "prio"]


def test_against_lifelines(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    mine = engine.concordance(res, cohort)
    eta = rossi[NAMES].to_numpy(float) @ res.coef.to_numpy()
    assert mine["concordance"] == pytest.approx(
        concordance_index(rossi["week"], -eta, rossi["arrest"]), rel=1e-12)


def _by_definition(start, stop, event, w, strata, eta):
    """Every (event i, row j at risk at t_i in i's stratum, j not an event at t_i) pair."""
    counts = np.zeros(3)
    for i in np.flatnonzero(event):
        t = stop[i]
        for j in range(len(stop)):
            at_risk = start[j] < t <= stop[j] and strata[j] == strata[i]
            if j == i or not at_risk or (event[j] and stop[j] == t):
                continue
            kind = 0 if eta[i] > eta[j] else (1 if eta[i] < eta[j] else 2)
            counts[kind] += w[i] * w[j]
    return counts


def test_strata_weights_and_entry_times_by_definition(rossi):
    data = rossi.iloc[:120]
    rows = []
    for i, r in data.iterrows():
        bounds = [0, *[c for c in (15, 35) if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "race": r["race"], "fin": r["fin"],
                         "age": r["age"], "prio": r["prio"],
                         "arrest": int(r["arrest"] and b == r["week"]), "w": 1 + i % 3})
    split = pd.DataFrame(rows)
    cohort = engine.Cohort.from_frame(split, "stop", "arrest", covariates=NAMES, start="start",
                                      id="id", strata="race", weights="w")
    res = engine.fit(cohort, ties="breslow")
    mine = engine.concordance(res, cohort)
    eta = split[NAMES].to_numpy(float) @ res.coef.to_numpy()
    counts = _by_definition(split["start"].to_numpy(float), split["stop"].to_numpy(float),
                            split["arrest"].to_numpy() == 1, split["w"].to_numpy(float),
                            split["race"].to_numpy(), eta)
    np.testing.assert_allclose(mine[["concordant", "discordant", "tied"]], counts, rtol=1e-12)
    assert mine["concordance"] == pytest.approx((counts[0] + counts[2] / 2) / counts.sum())


def test_a_cut_point_fit_is_counted_on_its_episodes_by_definition(rossi):
    """fin split at week 20: each episode (start, stop] carries fin[0,20) or fin[20,inf), and
    its own linear predictor; the pairs are those of the episodes split here by hand."""
    data = rossi.iloc[:150]
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="breslow", cut_points={"fin": [20.0]})
    rows = []
    for _, r in data.iterrows():
        bounds = [0, 20, r["week"]] if r["week"] > 20 else [0, r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"start": a, "stop": b, "early": r["fin"] * (a < 20),
                         "late": r["fin"] * (a >= 20), "age": r["age"], "prio": r["prio"],
                         "arrest": int(r["arrest"] and b == r["week"])})
    split = pd.DataFrame(rows)
    beta = res.coef[["fin[0,20)", "fin[20,inf)", "age", "prio"]].to_numpy()
    eta = split[["early", "late", "age", "prio"]].to_numpy(float) @ beta
    counts = _by_definition(split["start"].to_numpy(float), split["stop"].to_numpy(float),
                            split["arrest"].to_numpy() == 1, np.ones(len(split)),
                            np.zeros(len(split)), eta)
    for mine in (engine.concordance(res), engine.concordance(res, cohort)):
        np.testing.assert_allclose(mine[["concordant", "discordant", "tied"]], counts,
                                   rtol=1e-12)
        assert mine["concordance"] == pytest.approx((counts[0] + counts[2] / 2) / counts.sum())
