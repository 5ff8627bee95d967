"""engine.logrank_test's robust variance (case weights that are not counts, clusters, recurrent
events) against R's robust score test of coxph(..., ties = "breslow"), printed by
tests/data/r_logrank_robust.R (R 4.2.2, survival 3.5-3) to 15 digits, and against the score
residuals written out by their definition."""

import numpy as np
import pandas as pd
import pytest

import engine
from r_printed import DATA, sections

R = {label: [float(x) for x in lines[0].split()[1:]]
     for label, lines in sections("r_logrank_robust.Rout").items()}


@pytest.fixture(scope="module")
def rossi(rossi_r_weights):
    return rossi_r_weights.assign(g3=pd.cut(rossi_r_weights["prio"], [-1, 1, 4, 100])
                                  .astype(str))


def _check(test, label):
    statistic, df, p = R[label]
    assert test.statistic == pytest.approx(statistic, rel=1e-9)
    assert test.df == df and test.p == pytest.approx(p, rel=1e-8)


def test_weights_as_R(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    test = engine.logrank_test(cohort, by=rossi["g3"].to_numpy())
    assert test.spec["variance"] == "robust by row"
    _check(test, "rossi weighted")
    # sampling weights: their scale does not move the test (as counts it would, about tenfold:
    # survdiff's (n - d) / (n - 1) moves a little with n)
    scaled = engine.Cohort.from_frame(rossi.assign(w=rossi["w"] * 10), "week", "arrest",
                                      covariates=[], weights="w")
    assert engine.logrank_test(scaled, by=rossi["g3"].to_numpy()).statistic == \
        pytest.approx(test.statistic, rel=1e-10)
    counts = engine.logrank_test(cohort, by=rossi["g3"].to_numpy(), variance="model")
    tenfold = engine.logrank_test(scaled, by=rossi["g3"].to_numpy(), variance="model")
    assert tenfold.statistic == pytest.approx(10 * counts.statistic, rel=0.01)


def test_strata_and_clusters_as_R(rossi):
    stratified = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w",
                                          strata="race")
    _check(engine.logrank_test(stratified, by=rossi["g3"].to_numpy()),
           "rossi weighted strata race")
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    test = engine.logrank_test(cohort, by=rossi["g3"].to_numpy(),
                               cluster=np.minimum(rossi["age"], 30).to_numpy())
    assert test.spec["variance"] == "robust by cluster"
    _check(test, "rossi weighted cluster age")


def test_episodes_by_id_as_R(rossi):
    first = rossi.assign(tstart=0.0, stop=np.minimum(rossi["week"], 20.0),
                         ev=np.where(rossi["week"] <= 20, rossi["arrest"], 0))
    later = rossi[rossi["week"] > 20].assign(tstart=20.0, stop=lambda d: d["week"],
                                              ev=lambda d: d["arrest"])
    split = pd.concat([first, later], ignore_index=True)
    cohort = engine.Cohort.from_frame(split, "stop", "ev", covariates=["fin"], start="tstart",
                                      id="id", weights="w")
    test = engine.logrank_test(cohort, by="fin")
    assert test.spec["variance"] == "robust by id"
    _check(test, "rossi split weighted by id")


def test_recurrent_events_by_id_as_R():
    bladder = pd.read_csv(DATA / "bladder.csv")
    cohort = engine.Cohort.from_frame(bladder, "stop", "event", covariates=["rx"], id="id")
    test = engine.logrank_test(cohort, by="rx")
    assert test.spec["variance"] == "robust by id"
    _check(test, "bladder by id")


def test_fleming_harrington_residuals_against_the_definition():
    """rho = 1 with delayed entry, weights and clusters: V = R'R from the score residuals
    r_ig = delta_i w(T_i) (1[g_i = g] - p_g(T_i)) - sum_{start_i < t <= T_i} w(t) d/n (1[g_i = g]
    - p_g(t)), each written out at every event time."""
    rng = np.random.default_rng(11)
    n = 80
    start = rng.integers(0, 3, n).astype(float)
    frame = pd.DataFrame({"start": start, "stop": start + rng.integers(1, 10, n),
                          "event": (rng.random(n) < 0.6).astype(int), "g": rng.integers(0, 3, n),
                          "w": rng.uniform(0.3, 2.0, n), "row": np.arange(n),
                          "cluster": rng.integers(0, 20, n)})
    cohort = engine.Cohort.from_frame(frame, "stop", "event", covariates=["g"], start="start",
                                      id="row", weights="w")
    test = engine.logrank_test(cohort, by="g", rho=1.0, cluster=frame["cluster"].to_numpy())
    s0, t1, e, g, w = (frame[c].to_numpy() for c in ("start", "stop", "event", "g", "w"))
    times = np.unique(t1[e == 1])
    S, residuals = 1.0, np.zeros((n, 3))
    for t in times:
        at_risk = (s0 < t) & (t <= t1)
        dies = (t1 == t) & (e == 1)
        n_all, d_all = w[at_risk].sum(), w[dies].sum()
        p = np.array([w[at_risk & (g == k)].sum() for k in range(3)]) / n_all
        weight = S                                            # S(t-)^1
        own = np.eye(3)[g]
        residuals += dies[:, None] * weight * (own - p)
        residuals -= at_risk[:, None] * weight * d_all / n_all * (own - p)
        S *= 1 - d_all / n_all
    sums = pd.DataFrame(w[:, None] * residuals).groupby(frame["cluster"]).sum().to_numpy()
    np.testing.assert_allclose(test.variance.to_numpy(), sums.T @ sums, rtol=1e-10,
                               atol=1e-14)
    np.testing.assert_allclose(test.table["observed"] - test.table["expected"],
                               (w[:, None] * residuals).sum(0), atol=1e-12)


def test_bad_variance_arguments(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    with pytest.raises(ValueError, match="variance"):
        engine.logrank_test(cohort, by="fin", variance="sandwich")
    with pytest.raises(ValueError, match="cluster"):
        engine.logrank_test(cohort, by="fin", variance="model", cluster=np.arange(432))
    with pytest.raises(ValueError, match="one value per row"):
        engine.logrank_test(cohort, by="fin", cluster=np.arange(3))
