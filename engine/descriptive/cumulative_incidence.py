"""Cumulative incidence curves for competing risks: lifelines' Aalen-Johansen estimator per group.

    CIF_k(t) = sum_{u <= t} S(u-) dN_k(u) / Y(u),

S the all-cause Kaplan-Meier.  lifelines' AalenJohansenFitter breaks ties between different
causes by randomly jittering the event times; here they are broken deterministically instead:
at a time where the cause of interest and competing causes tie, the competing events are moved
a quarter of the smallest gap between distinct times earlier.  S(u-)/Y(u) is then the same for
every event of the tie, so the curve at each original time is the tie-aware estimate exactly, and
only those times are reported.  Confidence limits are lifelines' (log-log transformed), taken
as the smaller and larger of its two columns (lifelines 0.30 labels them the wrong way round).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..data import validation as v
from ..core.arguments import check_level, renamed
from ..data.cohort import Cohort
from ..core.errors import CohortError


@renamed(alpha="level= (the coverage: level = 1 - alpha, e.g. level=0.95)")
def cumulative_incidence(data, cause: int = 1, by=None, time: str | None = None,
                         event: str | None = None, weights: str | None = None,
                         level: float = 0.95) -> pd.DataFrame:
    """Aalen-Johansen cumulative incidence of one cause, overall or per group.

    Parameters
    ----------
    data : engine.Cohort or pandas.DataFrame
        A DataFrame needs ``time`` and ``event`` column names (event 0 censored, 1..m causes);
        its time, event, weights and group columns are checked as a cohort's (CohortError
        naming the column and rows for missing, negative or non-integer values).
    cause : int, the cause of interest
    by : None or str
        Group column: for a DataFrame any column; for a Cohort a strata column or a covariate.
    time, event, weights : str, DataFrame columns (weights optional; a Cohort brings its own)
    level : float, the coverage of the pointwise limits (as engine.kaplan_meier)

    Returns
    -------
    pandas.DataFrame, columns group, time, cif, lower, upper; one row per group and distinct
    time (time 0 first, where cif = lower = upper = 0; limits NaN where lifelines' variance is
    undefined, e.g. when the last subjects at risk all fail).
    """
    check_level(level)
    t, e, w, groups = _columns(data, by, time, event, weights)
    if not np.any(e == cause):
        raise CohortError(f"cause={cause!r} has no events; the event codes present are "
                          f"{sorted(set(np.unique(e[e > 0]).tolist()))}.")
    frames = []
    labels = ["all"] if groups is None else pd.unique(groups)
    for label in labels:
        rows = slice(None) if groups is None else np.asarray(groups == label)
        frames.append(_one_curve(t[rows], e[rows], None if w is None else w[rows], cause,
                                 1.0 - level).assign(group=label))
    out = pd.concat(frames, ignore_index=True)
    return out[["group", "time", "cif", "lower", "upper"]]


def _columns(data, by, time, event, weights):
    if isinstance(data, Cohort):
        t, e, w = np.asarray(data.time), np.asarray(data.event), data.weights
        if by is None:
            return t, e, w, None
        if by in data.strata_columns and len(data.strata_columns) == 1:
            return t, e, w, np.asarray(data.strata_labels, dtype=object)[data.strata]
        if by in data.names:
            return t, e, w, data.X[:, data.names.index(by)].toarray().ravel()
        raise ValueError(f"by={by!r} is neither the strata column nor a covariate of this "
                         f"cohort; covariates: {data.names[:20]}")
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be an engine.Cohort or a pandas DataFrame, got "
                        f"{type(data).__name__}")
    missing = [c for c in (time, event, weights, by) if c is not None and c not in data.columns]
    if time is None or event is None or missing:
        raise ValueError(f"a DataFrame needs time= and event= naming its columns; not found: "
                         f"{missing or [r for r, c in (('time', time), ('event', event)) if c is None]}")
    labels = data.index.to_numpy()
    t = data[time].to_numpy(float)
    v.check_finite(t, time, "time", labels)
    v.fail_rows(t < 0, t, time, "time", "negative times",
                "Follow-up times are measured from the time origin and must be >= 0.", labels)
    e = v.check_events(data[event].to_numpy(float), True, event, labels)
    w = None
    if weights is not None:
        w = data[weights].to_numpy(float)
        v.check_weights(w, weights, labels)
    if by is not None:
        v.check_no_missing(data[by], by, "group", labels)
    return t, e, w, None if by is None else data[by].to_numpy()


def _one_curve(t, e, w, cause, alpha):
    """lifelines' Aalen-Johansen on one group, ties between causes broken as the module says."""
    code = np.where(e == cause, 1, np.where(e > 0, 2, 0))
    distinct = np.unique(np.concatenate(([0.0], t)))
    shifted = t.astype(float).copy()
    if distinct.size > 1:
        delta = 0.25 * np.min(np.diff(distinct))
        mixed = np.intersect1d(t[code == 1], t[code == 2])
        move = (code == 2) & np.isin(t, mixed)
        shifted[move] -= delta
    from lifelines import AalenJohansenFitter   # lifelines loads slowly: on first use

    aj = AalenJohansenFitter(alpha=alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # lifelines' notes on same-cause ties
        aj.fit(shifted, code, event_of_interest=1, weights=w)
    cif = aj.cumulative_density_.iloc[:, 0]
    ci = aj.confidence_interval_
    keep = np.isin(cif.index.to_numpy(), distinct)
    limits = ci.to_numpy()[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # all-NaN rows where the curve is still 0
        lower, upper = np.nanmin(limits, axis=1), np.nanmax(limits, axis=1)
    value = cif.to_numpy()[keep]
    zero = value == 0.0
    return pd.DataFrame({"time": cif.index.to_numpy()[keep], "cif": value,
                         "lower": np.where(zero, 0.0, lower), "upper": np.where(zero, 0.0, upper)})
