"""Episodes: time-varying coefficients at cut points, and covariate changes from a long table.

A covariate whose effect is a step function of time (Yang2024 sec. 2.3, eqs 10-12) becomes one
covariate per interval on episodes split at the cut points, exactly as R's survSplit: the
episode (start, stop] is cut at every cut point c with start < c < stop, the event stays on the
last piece, and an event exactly at a cut point belongs to the earlier interval.  The column
``treat`` with cuts [10, 30] becomes ``treat[0,10)``, ``treat[10,30)`` and ``treat[30,inf)``.

Two layouts of the same split data give the same partial likelihood:
- ``counting``: (start, stop] episodes; risk sets by the two-scan difference (any entry times);
- ``strata``: the papers' route (Yang2024 sec. 2.2, eq. 7) when every subject enters at time 0:
  each interval is a stratum of its own, whose rows all enter before its first event time, so
  no entry times are needed and the scan is the plain stratified one.

The same cut of follow-up into bands with an indicator per band (split_into_bands) gives a
Poisson regression one baseline rate per band: the piecewise-exponential model.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import validation as v
from .cohort import Cohort
from .lexis import band_labels
from ..core.errors import CohortError

ROUTES = ("auto", "counting", "strata")


def split_at_cut_points(cohort: Cohort, cut_points: dict, route: str = "auto") -> Cohort:
    """The cohort on episodes split at the cut points, with interval covariates.

    Parameters
    ----------
    cohort : Cohort
    cut_points : dict, covariate name -> increasing positive cut times
    route : "auto" | "counting" | "strata"
        "auto" takes "strata" when no row has an entry time, else "counting".

    Returns
    -------
    Cohort with one row per episode; ``source["cut_points"]`` and ``source["route"]`` record
    the design.
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    cuts_by_name = _checked_cuts(cohort, cut_points)
    if route == "auto":
        route = "strata" if cohort.start is None else "counting"
    if route == "strata" and cohort.start is not None:
        raise ValueError("route='strata' needs every subject to enter at time 0; this cohort "
                         "has entry times: use route='counting'.")

    cuts = np.unique(np.concatenate(list(cuts_by_name.values())))
    row, start, stop, event = _split_rows(cohort, cuts)

    X, names = _interval_columns(sp.csr_matrix(cohort.X)[row].tocsc(), cohort.names,
                                 cuts_by_name, stop)
    ids = np.arange(cohort.n)[row] if cohort.id is None else np.asarray(cohort.id)[row]
    strata, labels = _strata(cohort, row, cuts, stop, route)
    source = {**cohort.source, "cut_points": {c: list(map(float, cuts_by_name[c]))
                                              for c in cuts_by_name}, "route": route}
    return Cohort(time=stop, event=event, X=X, names=names, binary=v.binary_columns(X),
                  start=start if route == "counting" else None, strata=strata,
                  strata_labels=labels, strata_columns=cohort.strata_columns, id=ids,
                  weights=None if cohort.weights is None else np.asarray(cohort.weights)[row],
                  reference_levels=cohort.reference_levels, excluded=dict(cohort.excluded),
                  source=source, competing_risks=cohort.competing_risks)


def split_into_bands(cohort: Cohort, bands) -> Cohort:
    """The cohort on (start, stop] episodes split at the follow-up times ``bands``, with an
    indicator column for each band after the first, "follow-up (20, 40]", ..., "follow-up >
    40" (bands (a, b] as R's survSplit): beside a Poisson regression's intercept (the first
    band's log rate) one baseline rate per band, the piecewise-exponential model."""
    cuts = np.asarray(bands, dtype=np.float64).ravel()
    row, start, stop, event = _split_rows(cohort, cuts)
    band = np.searchsorted(cuts, stop, side="left")          # (c_{m-1}, c_m] -> m
    names = band_names(cuts)
    taken = [name for name in names if name in cohort.names]
    if taken:
        raise CohortError(f"the cohort already has columns named {taken}; rename them to "
                          "split follow-up into bands.")
    counts = np.bincount(band, minlength=cuts.size + 1)
    empty = [names[m - 1] for m in range(1, cuts.size + 1) if counts[m] == 0]
    if empty:
        raise CohortError(f"no follow-up reaches the bands {empty}: their rates cannot be "
                          "estimated. Drop the band limits beyond the last follow-up time.")
    indicators = sp.csc_matrix((np.ones(int(np.sum(band > 0))),
                                (np.flatnonzero(band > 0), band[band > 0] - 1)),
                               shape=(row.size, cuts.size))
    X = sp.hstack([sp.csr_matrix(cohort.X)[row].tocsc(), indicators], format="csc")
    X.sort_indices()
    return Cohort(time=stop, event=event, X=X, names=[*cohort.names, *names],
                  binary=v.binary_columns(X), start=start,
                  strata=None if cohort.strata is None else np.asarray(cohort.strata)[row],
                  strata_labels=cohort.strata_labels, strata_columns=cohort.strata_columns,
                  id=np.arange(cohort.n)[row] if cohort.id is None
                  else np.asarray(cohort.id)[row],
                  weights=None if cohort.weights is None else np.asarray(cohort.weights)[row],
                  reference_levels=cohort.reference_levels, excluded=dict(cohort.excluded),
                  source={**cohort.source, "bands": cuts.tolist()},
                  competing_risks=cohort.competing_risks)


def band_names(bands) -> list[str]:
    """The indicator columns of split_into_bands: "follow-up (20, 40]", "follow-up > 40" for
    bands [20, 40] (the first band is the intercept's)."""
    edges = [-np.inf, *np.asarray(bands, float).ravel(), np.inf]
    return [f"follow-up {label}" for label in band_labels(edges)][1:]


def _split_rows(cohort: Cohort, cuts: np.ndarray) -> tuple:
    """(row, start, stop, event) of the episodes of ``cohort``'s rows cut at ``cuts``: the
    caller's row of each, its (start, stop], and the event on a row's last episode only."""
    start0 = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
    stop0 = np.asarray(cohort.time)
    first = np.searchsorted(cuts, start0, side="right")
    row, pieces = _pieces(cuts, start0, stop0)
    k = np.arange(row.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    cut_index = first[row] + k
    start = np.where(k == 0, start0[row], cuts[np.maximum(cut_index - 1, 0)])
    stop = np.where(k == pieces[row] - 1, stop0[row], cuts[np.minimum(cut_index, cuts.size - 1)])
    event = np.where(k == pieces[row] - 1, np.asarray(cohort.event)[row], 0)
    return row, start, stop, event


def episode_rows(cohort: Cohort, cut_points: dict) -> np.ndarray:
    """The caller's row of each episode of split_at_cut_points(cohort, cut_points), in its
    order: what a per-episode quantity is summed over to give one per row (R's
    ``collapse``)."""
    cuts = np.unique(np.concatenate(list(_checked_cuts(cohort, cut_points).values())))
    start = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
    return _pieces(cuts, start, np.asarray(cohort.time))[0]


def _pieces(cuts, start, stop):
    """(row, pieces): the caller's row of each episode, and each row's count of episodes (one
    more than the cut points strictly inside its (start, stop])."""
    pieces = (np.searchsorted(cuts, stop, side="left")
              - np.searchsorted(cuts, start, side="right") + 1)
    return np.repeat(np.arange(stop.size), pieces), pieces


def interval_names(name: str, cuts) -> list[str]:
    """``treat[0,10)``, ``treat[10,30)``, ``treat[30,inf)`` for cuts [10, 30]."""
    edges = [0.0, *cuts, np.inf]
    return [f"{name}[{_fmt(a)},{_fmt(b)})" for a, b in zip(edges[:-1], edges[1:])]


def _fmt(x: float) -> str:
    return "inf" if np.isinf(x) else f"{x:g}"


def _checked_cuts(cohort, cut_points):
    if not isinstance(cut_points, dict) or not cut_points:
        raise ValueError("cut_points must be a dict like {'treat': [10, 30]}")
    out = {}
    for name, cuts in cut_points.items():
        if name not in cohort.names:
            raise CohortError(f"cut_points names {name!r}, which is not a covariate of this "
                              f"cohort; covariates: {cohort.names[:20]}")
        c = np.asarray(cuts, dtype=np.float64).ravel()
        if c.size == 0 or not np.all(np.isfinite(c)) or np.any(c <= 0) or np.any(np.diff(c) <= 0):
            raise CohortError(f"cut points of {name!r} must be finite, positive and increasing; "
                              f"got {list(np.asarray(cuts).ravel())}")
        out[name] = c
    return out


def _interval_columns(X, names, cuts_by_name, stop):
    """Replace each split covariate by its interval columns (x where the episode lies in it)."""
    cols, new_names = [], []
    for j, name in enumerate(names):
        col = X[:, [j]]
        if name not in cuts_by_name:
            cols.append(col)
            new_names.append(name)
            continue
        cuts = cuts_by_name[name]
        interval = np.searchsorted(cuts, stop, side="left")   # (c_{m-1}, c_m] -> m
        for m, label in enumerate(interval_names(name, cuts)):
            piece = sp.csc_matrix(col.multiply((interval == m)[:, None]))
            piece.eliminate_zeros()
            if piece.nnz == 0:
                raise CohortError(f"no episode has {name} != 0 in {label}: its coefficient "
                                  f"cannot be estimated. Drop or move the cut points of {name!r}.")
            cols.append(piece)
            new_names.append(label)
    X = sp.hstack(cols, format="csc")
    X.sort_indices()
    return X, new_names


def _strata(cohort, row, cuts, stop, route):
    """Episode strata: the cohort's, crossed with the interval on the ``strata`` route."""
    base = None if cohort.strata is None else np.asarray(cohort.strata)[row]
    labels = cohort.strata_labels
    if route == "counting":
        return base, labels
    interval = np.searchsorted(cuts, stop, side="left")
    names = interval_names("interval", cuts)
    if base is None:
        uniq, codes = np.unique(interval, return_inverse=True)
        return codes, [names[m] for m in uniq]
    pairs = base * (cuts.size + 1) + interval
    uniq, codes = np.unique(pairs, return_inverse=True)
    return codes, [f"{labels[u // (cuts.size + 1)]}, {names[u % (cuts.size + 1)]}" for u in uniq]


def episodes_from_changes(subjects: pd.DataFrame, changes: pd.DataFrame, id: str = "id",
                          time: str = "time", event: str = "event",
                          start: str | None = None) -> pd.DataFrame:
    """Episodes from one row per subject plus a long table of covariate changes.

    Parameters
    ----------
    subjects : one row per subject: id, follow-up end ``time``, ``event``, optional entry
        ``start``, and the baseline value of every covariate.
    changes : long table with columns id, time, column, value: from ``time`` on, the subject's
        covariate ``column`` equals ``value``.  Changes at or after the end of follow-up (or at
        or before entry) do not split.

    Returns
    -------
    DataFrame with columns id, start, stop, event and the covariates, one row per episode,
    ready for ``Cohort.from_frame(..., start="start", time="stop", id=id)``.
    """
    roles = [("id", id), ("time", time), ("event", event)] + ([("start", start)] if start else [])
    v.check_columns_exist(subjects.columns, roles)
    v.check_columns_exist(changes.columns, [(c, c) for c in ("id", "time", "column", "value")])
    if subjects[id].duplicated().any():
        dup = subjects.index[subjects[id].duplicated()][:5].tolist()
        raise CohortError(f"subjects has several rows for one {id!r} (rows {dup}); give one row "
                          "per subject and put later values in the changes table.")
    unknown = sorted(set(changes["column"]) - set(subjects.columns))
    if unknown:
        raise CohortError(f"changes name columns {unknown} that subjects does not have; add "
                          "their baseline values to subjects.")
    subj = subjects.rename(columns={id: "_id"}).set_index("_id")
    entry = subj[start] if start else pd.Series(0.0, index=subj.index)
    ch = changes.rename(columns={"id": "_id"})
    ch = ch[ch["_id"].isin(subj.index)]
    ch = ch[(ch["time"] > entry.reindex(ch["_id"]).to_numpy())
            & (ch["time"] < subj[time].reindex(ch["_id"]).to_numpy())]

    splits = ch[["_id", "time"]].drop_duplicates().sort_values(["_id", "time"])
    bounds = pd.concat([pd.DataFrame({"_id": subj.index, "time": entry.to_numpy()}),
                        splits,
                        pd.DataFrame({"_id": subj.index, "time": subj[time].to_numpy()})])
    bounds = bounds.sort_values(["_id", "time"], kind="stable").reset_index(drop=True)
    nxt = bounds.groupby("_id")["time"].shift(-1)
    ep = pd.DataFrame({"_id": bounds["_id"], "start": bounds["time"], "stop": nxt}).dropna()
    is_last = ep["stop"].to_numpy() == subj[time].reindex(ep["_id"]).to_numpy()
    ep["event"] = np.where(is_last, subj[event].reindex(ep["_id"]).to_numpy(), 0)

    covariates = [c for c in subjects.columns if c not in (id, time, event, start)]
    base = subj[covariates].reindex(ep["_id"]).reset_index(drop=True)
    ep = ep.reset_index(drop=True)
    for column, rows in ch.groupby("column"):
        rows = rows.sort_values("time")[["_id", "time", "value"]]
        merged = pd.merge_asof(ep[["start", "_id"]].reset_index().sort_values("start"),
                               rows.rename(columns={"time": "start"}), on="start", by="_id",
                               direction="backward").set_index("index").sort_index()
        base[column] = merged["value"].where(merged["value"].notna(), base[column])
    out = pd.concat([ep, base], axis=1).rename(columns={"_id": id})
    return out[[id, "start", "stop", "event", *covariates]]
