"""Kaplan-Meier by arm for a comparative study: all persons as lifelines draws them, and a
1:m matched population with variable set sizes (CohortMethod's adjusted comparator curve):
the curve equals lifelines' weighted Kaplan-Meier and its standard error the infinitesimal
jackknife by matched set, taken here by finite differences of a product-limit written out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter
from scipy.stats import norm

from engine.cdm import kaplan_meier_by_arm
from engine.comparative import matched_weights


def matched_population(seed=3, sets=30):
    """One target and 1-3 comparators a set; integer days with ties."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sets):
        for k in range(1 + rng.integers(1, 4)):
            rows.append({"matched_set": s, "treatment": int(k == 0),
                         "time": float(rng.integers(1, 40)), "event": int(rng.random() < 0.6)})
    return pd.DataFrame(rows)


def product_limit(time, event, w, at):
    """Weighted Kaplan-Meier at each of ``at``, by its definition."""
    s, out = 1.0, np.ones(len(at))
    for u in np.unique(time[event == 1]):
        s *= 1.0 - w[(time == u) & (event == 1)].sum() / w[time >= u].sum()
        out[at >= u] = s
    return out


def test_all_persons_as_lifelines():
    pop = matched_population()
    table = kaplan_meier_by_arm(pop)
    for arm, z in (("target", 1), ("comparator", 0)):
        rows = pop[pop["treatment"] == z]
        km = KaplanMeierFitter().fit(rows["time"], rows["event"])
        got = table[table["arm"] == arm].set_index("time")
        want = km.survival_function_.iloc[:, 0]
        np.testing.assert_allclose(got["survival"], want.loc[got.index], rtol=1e-12)
        band = km.confidence_interval_survival_function_.loc[got.index]
        np.testing.assert_allclose(got["lower"], band.iloc[:, 0], rtol=1e-9)
        np.testing.assert_allclose(got["upper"], band.iloc[:, 1], rtol=1e-9)
        assert got["at_risk"].iloc[0] == len(rows) and got.index[0] == 0.0


@pytest.mark.filterwarnings("ignore::lifelines.exceptions.StatisticalWarning")  # its variance
def test_matched_comparators_weigh_one_over_m_with_set_clustered_band():
    pop = matched_population()
    w = matched_weights(pop["treatment"], pop["matched_set"])
    table = kaplan_meier_by_arm(pop, weights=w, cluster=pop["matched_set"])
    comparator = pop["treatment"].to_numpy() == 0
    time, event = pop["time"].to_numpy(), pop["event"].to_numpy()
    got = table[table["arm"] == "comparator"]
    at = got["time"].to_numpy()
    km = KaplanMeierFitter().fit(time[comparator], event[comparator], weights=w[comparator])
    np.testing.assert_allclose(got["survival"],
                               km.survival_function_.iloc[:, 0].loc[at], rtol=1e-12)
    # each set's influence: d S / d eps with the set's weights scaled by (1 + eps)
    eps, influence = 1e-6, []
    for s in np.unique(pop["matched_set"]):
        scale = np.where(pop["matched_set"].to_numpy() == s, 1.0, 0.0)
        up, down = (product_limit(time[comparator], event[comparator],
                                  (w * (1 + sign * eps * scale))[comparator], at)
                    for sign in (1, -1))
        influence.append((up - down) / (2 * eps))
    se = np.sqrt(np.sum(np.square(influence), axis=0))
    np.testing.assert_allclose(got["std_err"], se, rtol=1e-6, atol=1e-12)
    inside = (got["survival"] > 0) & (got["survival"] < 1)
    surv, se_log = got["survival"][inside], (se / got["survival"])[inside]
    power = np.exp(norm.ppf(0.975) * se_log / np.abs(np.log(surv)))
    np.testing.assert_allclose(got["lower"][inside], surv ** power, rtol=1e-6)
    np.testing.assert_allclose(got["upper"][inside], surv ** (1 / power), rtol=1e-6)
    # unweighted, a set of three comparators counts three times one of one: another curve
    plain = kaplan_meier_by_arm(pop)
    assert not np.allclose(plain.loc[plain["arm"] == "comparator", "survival"], got["survival"])
