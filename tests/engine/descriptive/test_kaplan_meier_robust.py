"""engine.kaplan_meier's robust (infinitesimal-jackknife) variance against R survfit and the
influence matrix written out by its definition.

R's values are printed by tests/data/r_km_robust.R (R 4.2.2, survival 3.5-3) into
tests/data/r_km_robust.Rout to 15 digits, so they are compared at 1e-9 relative.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

from r_printed import DATA, data_frame, sections

ROOT = Path(__file__).parents[3]
R = sections("r_km_robust.Rout")


def _r_table(label):
    """R's printed data.frame (group, time, surv, std.err, lower, upper) of one section."""
    return data_frame(R[label])


def _rossi(split):
    rossi = pd.read_csv(ROOT / "sample_data" / "rossi.csv")
    rossi["id"] = np.arange(1, len(rossi) + 1)
    rossi["w"] = 0.5 + ((rossi["id"] - 1) % 7) / 4
    if not split:
        return rossi
    first = rossi.assign(tstart=0.0, stop=np.minimum(rossi["week"], 20.0),
                         ev=np.where(rossi["week"] <= 20, rossi["arrest"], 0))
    later = rossi[rossi["week"] > 20].assign(tstart=20.0, stop=lambda d: d["week"],
                                              ev=lambda d: d["arrest"])
    return pd.concat([first, later]).sort_values(["id", "tstart"]).reset_index(drop=True)


def _compare(mine, label, columns=("surv", "std.err", "lower", "upper")):
    theirs = _r_table(label)
    assert mine["group"].tolist() == theirs["group"].tolist()
    np.testing.assert_allclose(mine["time"], theirs["time"], rtol=0)
    names = {"surv": "survival", "std.err": "std_err", "lower": "lower", "upper": "upper"}
    for column in columns:
        np.testing.assert_allclose(mine[names[column]], theirs[column], rtol=1e-9,
                                   err_msg=column)


@pytest.fixture(scope="module")
def rossi_split_km():
    split = _rossi(split=True)
    cohort = engine.Cohort.from_frame(split, "stop", "ev", covariates=["fin"], start="tstart",
                                      id="id", weights="w")
    return split, engine.kaplan_meier(cohort, by="fin", conf_type="log")


def test_fractional_weights_by_id_as_R(rossi_split_km):
    _, km = rossi_split_km
    assert km.variance == "robust by id"
    _compare(km.table, "rossi split, fractional weights, by id")


def test_rmst_se_from_R_influence(rossi_split_km):
    _, km = rossi_split_km
    r_se = [float(x) for x in R["rossi split rmst_se 52"][0].split()[1:]]
    np.testing.assert_allclose(km.rmst(52)["se"], r_se, rtol=1e-9)


def test_rows_as_clusters_as_R(rossi_split_km):
    split, _ = rossi_split_km
    cohort = engine.Cohort.from_frame(split, "stop", "ev", covariates=["fin"], start="tstart",
                                      id="id", weights="w")
    km = engine.kaplan_meier(cohort, by="fin", conf_type="log", cluster=np.arange(len(split)))
    assert km.variance == "robust by cluster"
    _compare(km.at([10, 52]), "rossi split, rows as clusters")


def test_unsplit_weights_equal_split_by_id(rossi_split_km):
    """One row per subject, each its own cluster: the same curve and SEs as the split rows
    clustered by id."""
    _, split_km = rossi_split_km
    cohort = engine.Cohort.from_frame(_rossi(split=False), "week", "arrest", covariates=["fin"],
                                      weights="w")
    plain = engine.kaplan_meier(cohort, by="fin", conf_type="log").at([10, 30, 52])
    split = split_km.at([10, 30, 52])
    np.testing.assert_allclose(plain["std_err"], split["std_err"], rtol=1e-12)


def test_cluster_without_weights_as_R():
    rossi = _rossi(split=False)
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    km = engine.kaplan_meier(cohort, by="fin", conf_type="log",
                             cluster=np.minimum(rossi["prio"], 6))
    assert km.variance == "robust by cluster"
    _compare(km.table, "rossi cluster prio, no weights")


def test_quantiles_and_times_of_weighted_curves_as_R():
    lung = pd.read_csv(ROOT / "sample_data" / "lung.csv")
    lung["w"] = 0.5 + (np.arange(len(lung)) % 7) / 4
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=[], strata="sex",
                                      weights="w")
    km = engine.kaplan_meier(cohort, by="sex", conf_type="log")
    _compare(km.at([100, 365, 730]), "lung weighted at")
    q = km.quantile([0.25, 0.5, 0.75])
    printed = R["lung weighted quantiles"]
    for name, first in (("time", 2), ("lower", 7), ("upper", 12)):
        for offset, group in enumerate(("sex=1", "sex=2")):
            values = pd.to_numeric(printed[first + offset].split()[1:], errors="coerce")
            np.testing.assert_array_equal(q.loc[q["group"] == group, name], values)


def test_several_events_per_subject_as_R():
    bladder = pd.read_csv(DATA / "bladder.csv")
    cohort = engine.Cohort.from_frame(bladder, "stop", "event", covariates=["rx"], id="id")
    robust = engine.kaplan_meier(cohort, by="rx", conf_type="log")
    assert robust.variance == "robust by id"
    _compare(robust.at([10, 20, 30, 40]), "bladder by id")
    greenwood = engine.kaplan_meier(cohort, by="rx", conf_type="log", variance="greenwood")
    _compare(greenwood.at([10, 20, 30, 40]), "bladder robust = FALSE")


def _brute_force(start, stop, w, event, cluster, table):
    """Each cluster's summed influence on log S at the curve's times, by the definition
    A_i(t) = sum_{t_k <= t} dN_i(t_k) / (n_k - d_k) - Y_i(t_k) d_k / (n_k (n_k - d_k))."""
    A = np.zeros((start.size, len(table)))
    for k, t in enumerate(table["time"]):
        at_risk = (start < t) & (t <= stop)
        dies = (stop == t) & event
        n, d = w[at_risk].sum(), w[dies].sum()
        A[:, k] = dies / (n - d) - at_risk * d / (n * (n - d))
    A = np.cumsum(A, axis=1) * w[:, None]
    B = np.stack([A[cluster == c].sum(0) for c in np.unique(cluster)])
    return B


def test_against_the_definition_with_entry_gaps_and_shared_clusters():
    """Delayed entry, gaps between a subject's episodes, several events per subject, clusters
    that hold rows of both groups and weights that vary within a cluster."""
    rng = np.random.default_rng(7)
    n = 120
    start = rng.integers(0, 5, n).astype(float)
    stop = start + rng.integers(1, 15, n)
    frame = pd.DataFrame({"start": start, "stop": stop, "event": rng.random(n) < 0.5,
                          "w": rng.uniform(0.2, 3.0, n), "g": rng.integers(0, 2, n),
                          "cluster": rng.integers(0, 40, n), "row": np.arange(n)})
    cohort = engine.Cohort.from_frame(frame.assign(event=frame["event"].astype(int)), "stop",
                                      "event", covariates=["g"], start="start", id="row",
                                      weights="w")
    km = engine.kaplan_meier(cohort, by="g", conf_type="log",
                             cluster=frame["cluster"].to_numpy())
    rmst = km.rmst(12.5)
    for g, label in enumerate(("g=0", "g=1")):
        rows = frame["g"].to_numpy() == g
        curve = km.curves[label]
        B = _brute_force(start[rows], stop[rows], frame["w"].to_numpy()[rows],
                         frame["event"].to_numpy()[rows], frame["cluster"].to_numpy()[rows], curve)
        np.testing.assert_allclose(curve["var_log"], (B ** 2).sum(0), rtol=1e-10)
        t, s = curve["time"].to_numpy(), curve["survival"].to_numpy()
        keep = t <= 12.5
        widths = np.diff(np.append(t[keep], 12.5))
        influence = -(B[:, keep] * s[keep]) @ widths
        assert rmst.loc[label, "se"] == pytest.approx(np.sqrt((influence ** 2).sum()), rel=1e-10)


def test_curve_reaching_zero():
    """R's influence is 0 from the time the curve reaches zero; no SE is shown there."""
    frame = pd.DataFrame({"t": [1, 2, 2, 3, 4, 5], "s": [1, 1, 0, 1, 0, 1],
                          "w": [1.5, 1, 2, 0.5, 1, 1.25]})
    cohort = engine.Cohort.from_frame(frame, "t", "s", covariates=[], weights="w")
    km = engine.kaplan_meier(cohort, conf_type="log")
    table = km.table
    # survfit(Surv(t, s) ~ 1, weights = w): std.err 0.1824501097 0.2048223829 0.2173416973
    # 0.2173416973, then S = 0 (R prints std.err 0, lower NA)
    np.testing.assert_allclose(table["std_err"][:4],
                               [0.1824501097, 0.2048223829, 0.2173416973, 0.2173416973],
                               rtol=1e-9)
    assert table["survival"].iloc[-1] == 0 and np.isnan(table["std_err"].iloc[-1])
    assert np.isnan(table["lower"].iloc[-1])
    # the restricted mean's SE from R's influence.surv: rows x widths (1, 1, 1, 1, 1) to tau 6
    influence = np.array([
        [-0.16409036861, -0.13555291320, -0.11090692898, -0.11090692898, 0],
        [0.02853745541, -0.09036860880, -0.07393795265, -0.07393795265, 0],
        [0.05707491082, 0.09512485137, 0.07782942385, 0.07782942385, 0],
        [0.01426872771, 0.02378121284, -0.07800630890, -0.07800630890, 0],
        [0.02853745541, 0.04756242568, 0.08223189631, 0.08223189631, 0],
        [0.03567181926, 0.05945303210, 0.10278987038, 0.10278987038, 0]])
    assert km.rmst(6)["se"].iloc[0] == pytest.approx(
        np.sqrt(((influence @ np.ones(5)) ** 2).sum()), rel=1e-9)


@pytest.mark.parametrize("kwargs, message", [
    ({"variance": "jackknife"}, "variance"),
    ({"variance": "greenwood", "cluster": np.arange(6)}, "cluster"),
    ({"cluster": np.arange(5)}, "one value per row"),
    ({"cluster": np.array([1, 2, None, 4, 5, 6], dtype=object)}, "missing cluster"),
])
def test_bad_variance_arguments(kwargs, message):
    frame = pd.DataFrame({"t": [1, 2, 2, 3, 4, 5], "s": [1, 1, 0, 1, 0, 1]})
    cohort = engine.Cohort.from_frame(frame, "t", "s", covariates=[])
    with pytest.raises((ValueError, engine.CohortError), match=message):
        engine.kaplan_meier(cohort, **kwargs)


def test_rmst_difference_of_independent_groups_as_R():
    """Greenwood curves of separate groups: the difference of R's rmean, SE the root of the sum
    of R's squared se(rmean), the ratio's limits on the log scale (survRM2's rmst2)."""
    lung = pd.read_csv(ROOT / "sample_data" / "lung.csv")
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=[], strata="sex")
    km = engine.kaplan_meier(cohort, by="sex")
    (m1, s1), (m2, s2) = data_frame(R["lung rmean 365 by sex"]).to_numpy()
    out = km.rmst_difference(365).iloc[0]
    assert (out["group"], out["reference"]) == ("sex=2", "sex=1")
    assert out["difference"] == pytest.approx(m2 - m1, rel=1e-12)
    assert out["se"] == pytest.approx(np.hypot(s1, s2), rel=1e-10)
    z = 1.959963984540054
    assert out["upper"] == pytest.approx(m2 - m1 + z * np.hypot(s1, s2), rel=1e-10)
    log_se = np.sqrt((s2 / m2) ** 2 + (s1 / m1) ** 2)
    assert out["ratio_lower"] == pytest.approx(m2 / m1 * np.exp(-z * log_se), rel=1e-10)
    table = km.rmst(365)
    assert table.loc["sex=1", "lower"] == pytest.approx(m1 - z * s1, rel=1e-10)


def test_rmst_difference_counts_clusters_in_both_groups():
    """Clusters holding rows of both groups make the groups' restricted means covary: the
    difference's SE is that of the clusters' summed influences on it, by finite differences of
    the estimates in each row's weight."""
    rng = np.random.default_rng(5)
    n = 90
    frame = pd.DataFrame({"t": rng.integers(1, 20, n).astype(float),
                          "e": (rng.random(n) < 0.6).astype(int), "g": rng.integers(0, 2, n),
                          "w": rng.uniform(0.3, 2.5, n), "cluster": rng.integers(0, 12, n)})

    def fitted(w):
        cohort = engine.Cohort.from_frame(frame.assign(w=w), "t", "e", covariates=["g"],
                                          weights="w")
        return engine.kaplan_meier(cohort, by="g", cluster=frame["cluster"].to_numpy())

    w, eps = frame["w"].to_numpy(), 1e-6
    out = fitted(w).rmst_difference(15.0).iloc[0]

    def difference(weights):
        return fitted(weights).rmst_difference(15.0)["difference"].iloc[0]

    influence = np.array([(difference(w + eps * np.eye(n)[i]) - difference(w - eps * np.eye(n)[i]))
                          / (2 * eps) for i in range(n)])
    by_cluster = pd.Series(w * influence).groupby(frame["cluster"]).sum()
    assert out["se"] == pytest.approx(np.sqrt((by_cluster ** 2).sum()), rel=1e-6)
    independent = np.hypot(*fitted(w).rmst(15.0)["se"])
    assert abs(out["se"] - independent) > 1e-3 * independent   # the covariance counts
