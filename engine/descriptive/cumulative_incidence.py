"""Cumulative incidence curves for competing risks: the Aalen-Johansen estimator per group, with
R survfit's (multi-state) robust variance and confidence limits.

    CIF_k(t) = sum_{u <= t} S(u-) dN_k(u) / Y(u),

S the all-cause Kaplan-Meier, dN_k and Y weighted sums of the cause's events and of the rows at
risk {start < u <= stop} (delayed entry is honoured).  The variance is the infinitesimal
jackknife, R's only one for multi-state curves: the derivative of CIF_k(t) in each row's weight,

    I_i(t) = sum_{t_j <= t} [S(t_j-) (dN_ki(t_j) - Y_i(t_j) dN_k(t_j) / Y(t_j)) / Y(t_j)
                             - a_j A_i(t_{j-1})],   a_j = S(t_j-) dN_k(t_j) / Y(t_j),

A_i the row's influence on log S (km_robust), summed within clusters (``cluster``, else the
subject id, else each row) and squared: it treats inverse-probability weights as sampling
weights, not counts.  While a row is at risk I_i(t) is a combination of the basis 1, CIF_k(t)
and G(t) = sum_{t_j <= t} a_j (H(t_{j-1}) - 1 / Y(t_j)), H the Greenwood sum; once it has ended,
of 1 and CIF_k(t): cluster_states sums the squares in O(N log N).  Limits are R's
survfit_confint of the state probability ("log" by default).  lifelines' AalenJohansenFitter,
the estimate's oracle in the tests, breaks tied times by random jitter, treats weights as
counts in its variance and has no clusters.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.arguments import check_level, renamed
from ..core.errors import CohortError
from ..data import validation as v
from ..data.clusters import checked_cluster, robust_clusters
from ..data.cohort import Cohort
from ..data.risk_set import risk_set_sums
from ..data.timefix import fixed_times
from .cluster_states import ClusterStates
from .confidence import survfit_limits

CONF_TYPES = ("log", "log-log", "plain")


@renamed(alpha="level= (the coverage: level = 1 - alpha, e.g. level=0.95)")
def cumulative_incidence(data, cause: int = 1, by=None, time: str | None = None,
                         event: str | None = None, weights: str | None = None,
                         level: float = 0.95, start: str | None = None, id: str | None = None,
                         cluster=None, conf_type: str = "log") -> pd.DataFrame:
    """Aalen-Johansen cumulative incidence of one cause, overall or per group, as R's
    survfit(Surv(start, time, factor(event)) ~ by, weights=, id=, cluster=).

    Parameters
    ----------
    data : engine.Cohort or pandas.DataFrame
        A DataFrame needs ``time`` and ``event`` column names (event 0 censored, 1..m causes);
        its columns are checked as a cohort's (CohortError naming the column and rows for
        missing, negative or non-integer values).  A Cohort brings its own entry times,
        ids and weights.
    cause : int, the cause of interest
    by : None or str
        Group column: for a DataFrame any column; for a Cohort a strata column or a covariate.
    time, event, weights, start, id : str, DataFrame columns (all but time and event optional;
        ``start`` the entry time of (start, time] rows, ``id`` the subject, whose rows form one
        cluster of the variance)
    level : float, the coverage of the pointwise limits
    cluster : None, or one value per row: the clusters of the variance (default the subject
        id, else each row)
    conf_type : "log" (R's default) | "log-log" | "plain"

    Returns
    -------
    pandas.DataFrame, columns group, time, cif, std_err, lower, upper; one row per group and
    distinct time (time 0 first, where every column but time is 0; the limits are 0 while the
    curve is 0).
    """
    check_level(level)
    if conf_type not in CONF_TYPES:
        raise ValueError(f"conf_type must be one of {CONF_TYPES}, got {conf_type!r}")
    rows = _columns(data, by, time, event, weights, start, id)
    n = rows["time"].size
    clusters = robust_clusters(n, rows["id"], checked_cluster(cluster, n))[0]
    t, e = rows["time"], rows["event"]
    if not np.any(e == cause):
        raise CohortError(f"cause={cause!r} has no events; the event codes present are "
                          f"{sorted(set(np.unique(e[e > 0]).tolist()))}.")
    frames = []
    groups = rows["groups"]
    labels = ["all"] if groups is None else pd.unique(groups)
    for label in labels:
        keep = np.ones(t.size, bool) if groups is None else np.asarray(groups == label)
        curve = _one_curve(rows["start"][keep], t[keep], e[keep], rows["weights"][keep],
                           clusters[keep], cause)
        with np.errstate(divide="ignore", invalid="ignore"):
            var_log = np.where(curve["cif"] > 0, curve["std_err"] ** 2 / curve["cif"] ** 2,
                               0.0)
        lower, upper = survfit_limits(curve["cif"], var_log, conf_type, level)
        frames.append(curve.assign(group=label, lower=lower, upper=upper))
    out = pd.concat(frames, ignore_index=True)
    return out[["group", "time", "cif", "std_err", "lower", "upper"]]


def _columns(data, by, time, event, weights, start, id):
    """The rows' time, event, start, weights, ids and group labels as arrays."""
    if isinstance(data, Cohort):
        n = data.n
        out = {"time": np.asarray(data.time), "event": np.asarray(data.event),
               "start": np.zeros(n) if data.start is None else np.asarray(data.start),
               "weights": np.ones(n) if data.weights is None else np.asarray(data.weights),
               "id": None if data.id is None else np.asarray(data.id), "groups": None}
        if by is None:
            return out
        if by in data.strata_columns and len(data.strata_columns) == 1:
            return {**out, "groups": np.asarray(data.strata_labels, dtype=object)[data.strata]}
        if by in data.names:
            return {**out, "groups": data.X[:, data.names.index(by)].toarray().ravel()}
        raise ValueError(f"by={by!r} is neither the strata column nor a covariate of this "
                         f"cohort; covariates: {data.names[:20]}")
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be an engine.Cohort or a pandas DataFrame, got "
                        f"{type(data).__name__}")
    named = (time, event, weights, by, start, id)
    missing = [c for c in named if c is not None and c not in data.columns]
    if time is None or event is None or missing:
        unnamed = [r for r, c in (("time", time), ("event", event)) if c is None]
        raise ValueError(f"a DataFrame needs time= and event= naming its columns; not found: "
                         f"{missing or unnamed}")
    labels = data.index.to_numpy()
    t = data[time].to_numpy(float)
    entry = None if start is None else data[start].to_numpy(float)
    if entry is None:       # a time of 0 is an event or censoring at the origin, as in R
        v.check_finite(t, time, "time", labels)
        v.fail_rows(t < 0, t, time, "time", "negative times",
                    "Follow-up times are measured from the time origin and must be >= 0.",
                    labels)
    else:
        v.check_times(t, entry, {"time": time, "start": start}, labels)
    t, entry = fixed_times(t, entry, {"time": time, "start": start}, labels)
    e = v.check_events(data[event].to_numpy(float), True, event, labels)
    w = np.ones(t.size)
    if weights is not None:
        w = data[weights].to_numpy(float)
        v.check_weights(w, weights, labels)
    for column, role in ((by, "group"), (id, "id")):
        if column is not None:
            v.check_no_missing(data[column], column, role, labels)
    if id is not None and entry is not None:
        v.check_episodes(data[id].to_numpy(), entry, t, {"id": id}, labels)
    return {"time": t, "event": e, "start": np.zeros(t.size) if entry is None else entry,
            "weights": w, "id": None if id is None else data[id].to_numpy(),
            "groups": None if by is None else data[by].to_numpy()}


def _one_curve(start, stop, e, w, cluster, cause):
    """time, cif and std_err at 0 and at each distinct time of one group's rows."""
    times = np.unique(stop)
    any_event, of_cause = e > 0, e == cause
    slot = np.searchsorted(times, stop)
    died = np.bincount(slot[any_event], w[any_event], times.size)
    d_cause = np.bincount(slot[of_cause], w[of_cause], times.size)
    n = risk_set_sums(start, stop, w, times)
    n = np.where(np.abs(n - died) <= 1e-12 * w.sum(), died, n)   # rounding of running sums
    with np.errstate(divide="ignore", invalid="ignore"):
        S = np.cumprod(np.where(died > 0, 1.0 - died / n, 1.0))
        before = np.concatenate(([1.0], S[:-1]))                 # S(t_j-)
        a = np.where(d_cause > 0, before * d_cause / n, 0.0)
        b = np.where(n > 0, before / n, 0.0)
        h = np.where((died > 0) & (n > died), died / (n * (n - died)), 0.0)
        jump = np.where(n > died, 1.0 / (n - died), 0.0)
        ratio = np.where(n > 0, a / n, 0.0)
    F = np.concatenate(([0.0], np.cumsum(a)))                      # F[j]: through time j
    H = np.concatenate(([0.0], np.cumsum(h)))
    G = np.concatenate(([0.0], np.cumsum(a * H[:-1] - ratio)))
    i0 = np.searchsorted(times, start, side="right")               # times <= start
    i1 = slot + 1                                                  # times <= stop
    c = np.where(any_event, jump[slot], 0.0) - (H[i1] - H[i0])
    own = np.where(of_cause, b[slot], 0.0)
    states = ClusterStates(
        start, stop, cluster,
        (w * (H[i0] * F[i0] - G[i0]), -w * H[i0], w),
        (w * (G[i1] - H[i0] * F[i1] + own + c * F[i1]), w * (H[i0] - c), -w), times)
    se = np.sqrt(states.variance(np.stack((np.ones(times.size), F[1:], G[1:]))))
    out = pd.DataFrame({"time": np.concatenate(([0.0], times)), "cif": F,
                        "std_err": np.concatenate(([0.0], se))})
    return out.iloc[1:].reset_index(drop=True) if times[0] == 0 else out
