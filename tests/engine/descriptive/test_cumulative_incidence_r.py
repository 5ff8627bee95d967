"""engine.cumulative_incidence's standard errors and limits against R survfit's multi-state
Aalen-Johansen curves (its robust, infinitesimal-jackknife variance) and against the influence
of each row written out by its definition.

R's values are printed by tests/data/r_cif_robust.R (R 4.2.2, survival 3.5-3) into
tests/data/r_cif_robust.Rout to 15 digits, so they are compared at 1e-9 relative.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine
from r_printed import data_frame, sections

R = sections("r_cif_robust.Rout")
TIMES = [2, 5, 10, 20, 50, 100]


@pytest.fixture(scope="module")
def bmtcrr():
    b = pd.read_csv(Path(__file__).parents[3] / "sample_data" / "bmtcrr.csv")
    b["w"] = 0.5 + (np.arange(len(b)) % 7) / 4
    b["id"] = np.arange(1, len(b) + 1)
    return b


def _at(curves, times):
    """Each group's row at the last time <= each of ``times`` (R's summary(times=))."""
    rows = []
    for _, curve in curves.groupby("group", sort=False):
        last = np.searchsorted(curve["time"].to_numpy(), times, side="right") - 1
        rows.append(curve.iloc[last].assign(time=times))
    return pd.concat(rows, ignore_index=True)


def _compare(mine, label, columns=("cif", "std.err", "lower", "upper")):
    theirs = data_frame(R[label])
    if "group" in theirs:
        assert [g.replace("D=", "") for g in theirs["group"]] == mine["group"].tolist()
    names = {"cif": "cif", "std.err": "std_err", "lower": "lower", "upper": "upper"}
    for column in columns:
        np.testing.assert_allclose(mine[names[column]], theirs[column], rtol=1e-9,
                                   err_msg=column)


@pytest.mark.parametrize("cause", [1, 2])
def test_by_group_as_R(bmtcrr, cause):
    out = engine.cumulative_incidence(bmtcrr, cause=cause, by="D", time="ftime",
                                      event="Status")
    _compare(_at(out, TIMES), f"bmtcrr by D cause {cause}")


def test_fractional_weights_as_R(bmtcrr):
    out = engine.cumulative_incidence(bmtcrr, cause=1, by="D", time="ftime", event="Status",
                                      weights="w")
    _compare(_at(out, TIMES), "bmtcrr by D weighted cause 1")


def test_clusters_as_R_influence(bmtcrr):
    out = engine.cumulative_incidence(bmtcrr, cause=1, time="ftime", event="Status",
                                      weights="w", cluster=bmtcrr["Phase"].to_numpy())
    _compare(_at(out, TIMES), "bmtcrr weighted clustered by Phase cause 1 std.err",
             columns=("cif", "std.err"))


def test_log_log_limits_as_R(bmtcrr):
    out = engine.cumulative_incidence(bmtcrr, cause=1, time="ftime", event="Status",
                                      weights="w", conf_type="log-log")
    _compare(_at(out, TIMES), "bmtcrr weighted cause 1 log-log")


def test_delayed_entry_as_R(bmtcrr):
    entry = np.where(bmtcrr["id"] <= 60, bmtcrr["ftime"] / 3, 0.0)    # 4.8 / 3: timefix
    frame = bmtcrr.assign(entry=entry)
    out = engine.cumulative_incidence(frame, cause=1, time="ftime", event="Status",
                                      weights="w", start="entry", id="id")
    _compare(_at(out, TIMES), "bmtcrr delayed entry weighted cause 1")
    cohort = engine.Cohort.from_frame(frame, "ftime", "Status", covariates=["Age"],
                                      start="entry", id="id", weights="w",
                                      competing_risks=True)
    pd.testing.assert_frame_equal(engine.cumulative_incidence(cohort, cause=1), out)


def test_episodes_of_one_subject_as_R(bmtcrr):
    """Rows split at month 6 and clustered by id: the unsplit curve and SEs."""
    b = bmtcrr
    first = b.assign(t0=0.0, t1=np.minimum(b["ftime"], 6.0),
                     st=np.where(b["ftime"] <= 6, b["Status"], 0))
    later = b[b["ftime"] > 6].assign(t0=6.0, t1=lambda d: d["ftime"], st=lambda d: d["Status"])
    split = pd.concat([first, later], ignore_index=True)
    out = engine.cumulative_incidence(split, cause=1, time="t1", event="st", weights="w",
                                      start="t0", id="id")
    _compare(_at(out, TIMES), "bmtcrr split by id weighted cause 1")


def test_against_the_definition():
    """The derivative of the Aalen-Johansen estimate in each row's weight, by finite
    differences of the estimate itself, summed within clusters: entry times, tied times of
    different causes, weights varying within clusters."""
    rng = np.random.default_rng(3)
    n = 60
    start = rng.integers(0, 4, n).astype(float)
    frame = pd.DataFrame({"start": start, "stop": start + rng.integers(1, 12, n),
                          "event": rng.integers(0, 3, n), "w": rng.uniform(0.3, 2.5, n),
                          "cluster": rng.integers(0, 15, n)})
    out = engine.cumulative_incidence(frame, cause=1, time="stop", event="event", weights="w",
                                      start="start", cluster=frame["cluster"].to_numpy())

    def estimate(w):
        return engine.cumulative_incidence(frame.assign(w=w), cause=1, time="stop",
                                           event="event", weights="w",
                                           start="start")["cif"].to_numpy()

    w, eps = frame["w"].to_numpy(), 1e-6
    influence = np.stack([(estimate(w + eps * np.eye(n)[i]) - estimate(w - eps * np.eye(n)[i]))
                          / (2 * eps) for i in range(n)])
    by_cluster = pd.DataFrame(w[:, None] * influence).groupby(frame["cluster"]).sum()
    np.testing.assert_allclose(out["std_err"], np.sqrt((by_cluster ** 2).sum(0)), rtol=1e-6,
                               atol=1e-12)


def test_bad_arguments(bmtcrr):
    with pytest.raises(ValueError, match="conf_type"):
        engine.cumulative_incidence(bmtcrr, cause=1, time="ftime", event="Status",
                                    conf_type="logit")
    with pytest.raises(ValueError, match="one value per row"):
        engine.cumulative_incidence(bmtcrr, cause=1, time="ftime", event="Status",
                                    cluster=np.arange(3))
    with pytest.raises(engine.CohortError, match="start >= stop"):
        engine.cumulative_incidence(bmtcrr.assign(s=bmtcrr["ftime"]), cause=1, time="ftime",
                                    event="Status", start="s", id="id")
