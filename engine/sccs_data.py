"""SccsData: self-controlled case series eras, validated once (seed 002, sec. 2.1).

An era is a stretch of one case's observation time with constant exposure: the case id, the era
length l_ik (days), the number of events y_ik in it and the exposure indicators x_ik (sparse
CSC columns, one per drug or risk window).  Rows stay in the caller's order and are never
dropped: bad input raises a CohortError naming the column, the first bad rows and the fix.
Columns that carry no within-case contrast (constant in every case, or duplicates) are left out
with one DataWarning and recorded in ``excluded``: the conditional likelihood cannot see them.

``from_cases`` builds the eras from raw case histories as R SCCS's ``formatdata`` does
(Farrington, Whitaker & Ghebremichael Weldeselassie 2018, "Self-controlled case series
studies: a modelling guide with R"): days are whole numbers and inclusive, so an observation
period from ``sta`` to ``end`` lasts end - sta + 1 days, a risk window (a, b) after an
exposure starting on day s covers days s + a .. s + b, and an age cut at day c starts a new age
group on day c.  A repeat exposure of a drug ends the previous exposure's windows the day before
its own first window opens (formatdata's rule), and every window is clipped to the observation
period.  Identical (case, event day) rows count once, as in formatdata.  All of it is one sort
of the cut points and one sweep, with no loop over cases.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numba import njit
from pandas.api import types as ptypes

from . import validation as v
from .errors import CohortError, DataWarning

_END = re.compile(r"^end\s*(?:([+-])\s*(\d+))?$")


class SccsData:
    """Validated SCCS eras: the input of ``engine.fit(..., model="sccs")``.

    Attributes
    ----------
    case : ndarray, shape (n,), the case id of every era
    length : ndarray of float64, shape (n,), era lengths l_ik (> 0)
    events : ndarray of int64, shape (n,), event counts y_ik (>= 0)
    X : scipy.sparse.csc_matrix of float64, shape (n, p), exposures
    names : list of str, length p
    excluded : dict, covariate name -> why it was left out
    source : dict, role -> column name, and where the data came from
    id, weights, strata, start : the case id, and None (for the shared resampling machinery,
        which resamples cases as subjects)
    """

    weights = None
    strata = None
    start = None
    strata_columns = ()

    def __init__(self, *, case, length, events, X, names, excluded, source):
        self.case = _frozen(case)
        self.length = _frozen(length, np.float64)
        self.events = _frozen(events, np.int64)
        self.X = X
        self.names = list(names)
        self.excluded = excluded
        self.source = source

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def from_frame(cls, df, case, length, events, covariates=None):
        """Eras from a DataFrame with one row per era (case id, length, event count and
        numeric exposure columns; ``covariates=None`` takes every other column)."""
        if not isinstance(df, pd.DataFrame):
            raise CohortError(f"from_frame needs a pandas DataFrame, got {type(df).__name__}. "
                              "Use SccsData.from_arrays for arrays.")
        roles = [("case", case), ("length", length), ("events", events)]
        v.check_columns_exist(df.columns, roles)
        used = [c for _, c in roles]
        if covariates is None:
            covariates = [c for c in df.columns if c not in used]
        covariates = [covariates] if isinstance(covariates, str) else list(covariates)
        v.check_columns_exist(df.columns, [("covariate", c) for c in covariates])
        both = sorted(set(map(str, used)) & set(map(str, covariates)))
        if both:
            raise CohortError(f"column(s) {both} are named both as covariates and as case, "
                              "length or events; give each column one role.")
        if len(df) == 0:
            raise CohortError("the data has no rows. Check the filter or query that made it.")
        labels = df.index.to_numpy()
        X = sp.csc_matrix(np.column_stack(
            [_numeric(df[c], c, "covariate", labels) for c in covariates])
            if covariates else np.zeros((len(df), 0)))
        return cls._validated(
            case=df[case], length=_numeric(df[length], length, "length", labels),
            events=_numeric(df[events], events, "events", labels), X=X,
            names=[str(c) for c in covariates], labels=labels,
            role_names={"case": case, "length": length, "events": events},
            source={"origin": "DataFrame", "case": case, "length": length, "events": events,
                    "covariates": covariates})

    @classmethod
    def from_arrays(cls, case, length, events, X, names=None):
        """Eras from arrays and a scipy.sparse (or dense) design: the seed's scale, never
        densified.  ``names`` default to x0 .. x{p-1}."""
        case = np.asarray(case)
        if case.ndim != 1 or case.size == 0:
            raise CohortError(f"case must be a non-empty 1-d array, got shape {case.shape}.")
        n = case.size
        arrays = {}
        for role, values in (("length", length), ("events", events)):
            values = np.asarray(values)
            if values.shape != (n,):
                raise CohortError(f"{role} has shape {values.shape} but case has {n} rows. "
                                  "Pass 1-d arrays of one length.")
            arrays[role] = _numeric(pd.Series(values), role, role)
        if sp.issparse(X):
            X = sp.csc_matrix(X, dtype=np.float64, copy=True)
        else:
            X = np.asarray(X)
            if X.ndim != 2 or X.dtype.kind not in "biuf":
                raise CohortError(f"X must be a scipy.sparse matrix or a 2-d numeric array, got "
                                  f"shape {X.shape} of type {X.dtype}.")
            X = sp.csc_matrix(X.astype(np.float64))
        if X.shape[0] != n:
            raise CohortError(f"X has {X.shape[0]} rows but case has {n}. Pass one row of X "
                              "per era, in the same order.")
        names = [f"x{j}" for j in range(X.shape[1])] if names is None else [str(s) for s in names]
        if len(names) != X.shape[1]:
            raise CohortError(f"names has {len(names)} entries but X has {X.shape[1]} columns. "
                              "Pass one name per column of X.")
        return cls._validated(
            case=pd.Series(case), length=arrays["length"], events=arrays["events"], X=X,
            names=names, labels=None,
            role_names={"case": "case", "length": "length", "events": "events"},
            source={"origin": "arrays", "case": "case", "length": "length",
                    "events": "events", "covariates": names})

    @classmethod
    def from_cases(cls, df, case, obs_start, obs_end, event_times, exposure_start=(),
                   exposure_end=None, risk_windows=None, age_cuts=None, exposures=None,
                   first_event_only=False, naive_period=0, min_age=None, max_age=None):
        """Eras from raw case histories, as R SCCS's ``formatdata`` (see the module docstring).

        Parameters
        ----------
        df : DataFrame, one row per event (R SCCS's layout; rows repeating a case's other
            columns are fine)
        case, obs_start, obs_end, event_times : columns of the case id, the first and last day
            of observation, and the event day (whole days: ages or day numbers)
        exposure_start : column(s) of exposure start days, one per drug (NaN: not exposed);
            distinct values within a case are repeat exposures
        exposure_end : None, or a dict drug column -> column of exposure end days (for windows
            anchored at the end, e.g. R SCCS's ``aedrug``)
        risk_windows : dict drug -> list of (a, b) windows (a sequence applies to every drug);
            an offset is days after the exposure start, or "end", "end+k", "end-k" (days after
            the exposure end).  A window names its column ``drug[a,b]``.  Default: (0, "end")
            for drugs with an end; a drug with starts only needs its windows given.
        age_cuts : increasing days at which a new age group starts; columns ``age[c1,c2)`` ..
            ``age[ck,inf)`` against the group before c1
        exposures : optional long DataFrame with columns case, drug, start (and end), for
            many drugs at once (multi-drug SCCS)
        first_event_only : keep each case's first event only (for outcomes whose recurrences
            are not independent); the observation period is unchanged
        naive_period, min_age, max_age : the study window of each case, as OHDSI's
            SelfControlledCaseSeries: observation starts naive_period days after obs_start and
            within [min_age, max_age] (days, on the scale of the other columns).  Applied after
            first_event_only, so a case whose first event falls outside its window leaves; the
            events and cases left out are counted in a DataWarning and ``source["left_out"]``.
        """
        if not isinstance(df, pd.DataFrame):
            raise CohortError(f"from_cases needs a pandas DataFrame, got {type(df).__name__}.")
        exposure_start = ([exposure_start] if isinstance(exposure_start, str)
                          else list(exposure_start))
        exposure_end = dict(exposure_end or {})
        roles = [("case", case), ("obs_start", obs_start), ("obs_end", obs_end),
                 ("event_times", event_times)]
        roles += [("exposure_start", c) for c in exposure_start]
        roles += [("exposure_end", c) for c in exposure_end.values()]
        v.check_columns_exist(df.columns, roles)
        unknown = sorted(set(exposure_end) - set(exposure_start))
        if unknown:
            raise CohortError(f"exposure_end names {unknown}, which are not in exposure_start; "
                              "key exposure_end by the exposure start columns.")
        if len(df) == 0:
            raise CohortError("the data has no rows. Check the filter or query that made it.")
        labels = df.index.to_numpy()
        v.check_no_missing(df[case], case, "case", labels)
        codes, ids = pd.factorize(df[case], sort=True)
        sta = _days(df[obs_start], obs_start, "obs_start", labels)
        end = _days(df[obs_end], obs_end, "obs_end", labels)
        t = _days(df[event_times], event_times, "event_times", labels)
        v.fail_rows(sta > end, sta, obs_start, "obs_start", f"a start after {obs_end!r}",
                    "Each case's observation period must start on or before its last day.",
                    labels)
        first = np.zeros(len(ids), np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        for values, name in ((sta, obs_start), (end, obs_end)):
            v.fail_rows(values != values[first][codes], values, name, name,
                        "values that differ between rows of one case",
                        "A case has one observation period: give every row of a case the same "
                        "value.", labels)
        sta, end = sta[first], end[first]
        v.fail_rows((t < sta[codes]) | (t > end[codes]), t, event_times, "event_times",
                    f"events outside the observation period [{obs_start}, {obs_end}]",
                    "Remove these events or widen the observation period; the SCCS "
                    "likelihood only counts events observed.", labels)

        long = [_exposure_rows(df, codes, c, exposure_end.get(c), labels)
                for c in exposure_start]
        if exposures is not None:
            long.append(_long_exposures(exposures, ids))
        expo = (pd.concat(long, ignore_index=True) if long else
                pd.DataFrame({"case": [], "drug": [], "start": [], "end": []}))
        expo = expo.drop_duplicates(ignore_index=True)
        once = pd.DataFrame({"c": codes, "t": t}).drop_duplicates()     # formatdata's unique()
        if first_event_only:
            once = once[once["t"] == once.groupby("c")["t"].transform("min")]
        drugs = list(dict.fromkeys(expo["drug"]))
        windows = _windows(risk_windows, drugs, set(expo.loc[expo["end"].notna(), "drug"]))
        left_out = {"events": 0, "cases": 0}
        if naive_period or min_age is not None or max_age is not None:
            sta, end, once, expo, ids, left_out = _study_window(
                sta, end, once, expo, ids, naive_period, min_age, max_age)
        intervals, names = _window_intervals(expo, windows, drugs)
        if age_cuts is not None and len(age_cuts):
            age_iv, age_names = _age_intervals(age_cuts, sta, end, len(names))
            intervals = [np.concatenate([a, b]) for a, b in zip(intervals, age_iv)]
            names += age_names
        era_case, length, events, X = _sweep(sta, end, once["c"].to_numpy(),
                                             once["t"].to_numpy(), intervals, len(names))
        return cls._validated(
            case=pd.Series(np.asarray(ids)[era_case]), length=length, events=events, X=X,
            names=names, labels=None,
            role_names={"case": case, "length": "length", "events": "events"},
            source={"origin": "cases", "case": case, "obs_start": obs_start,
                    "obs_end": obs_end, "event_times": event_times,
                    "exposure_start": exposure_start, "exposure_end": exposure_end,
                    "risk_windows": {d: [list(raw) for raw, _ in ws] for d, ws in windows.items()},
                    "first_event_only": first_event_only, "naive_period": naive_period,
                    "min_age": min_age, "max_age": max_age, "left_out": left_out,
                    "age_cuts": None if age_cuts is None else [float(c) for c in age_cuts],
                    "days": "inclusive (R SCCS formatdata)"})

    @classmethod
    def _validated(cls, *, case, length, events, X, names, labels, role_names, source):
        """Check every role, leave out columns without within-case contrast, build."""
        v.check_no_missing(case, role_names["case"], "case", labels)
        v.check_finite(length, role_names["length"], "length", labels)
        v.fail_rows(length <= 0, length, role_names["length"], "length", "length <= 0",
                    "Era lengths are positive (days in the era); drop empty eras.", labels)
        ev = role_names["events"]
        v.check_finite(events, ev, "events", labels)
        v.fail_rows((events < 0) | (events != np.round(events)), events, ev, "events",
                    "counts that are not whole numbers >= 0",
                    "Events are counts per era: 0, 1, 2, ...", labels)
        if not (events > 0).any():
            raise CohortError(f"column {ev!r} (events) is 0 in every era: there are no cases. "
                              "Check that the right column was named as events.")
        repeated = sorted(set(pd.Index(names)[pd.Index(names).duplicated()]))
        if repeated:
            raise CohortError(f"names {repeated} appear more than once. Give every covariate "
                              "a unique name.")
        X.sum_duplicates()
        X.eliminate_zeros()
        X.sort_indices()
        v.check_covariates_finite(X, names, labels)
        codes = pd.factorize(np.asarray(case))[0]
        excluded = {**_no_contrast(X, names, codes), **v.redundant_columns(X, names)}
        if excluded:
            listing = ", ".join(f"{name!r} ({why})" for name, why in excluded.items())
            warnings.warn(f"{len(excluded)} covariate column(s) excluded from the model: "
                          f"{listing}. The conditional (within-case) likelihood cannot "
                          "estimate them; see SccsData.excluded.", DataWarning, stacklevel=3)
            keep = np.array([name not in excluded for name in names], bool)
            X = X[:, np.flatnonzero(keep)]
            names = [name for name, kept in zip(names, keep) if kept]
        return cls(case=np.asarray(case), length=length, events=events, X=X, names=names,
                   excluded=excluded, source=source)

    # -- properties -----------------------------------------------------------------------
    @property
    def id(self):
        """The case id of every era: cases are the subjects that folds and the bootstrap
        resample."""
        return self.case

    @property
    def n(self) -> int:
        """Number of eras (rows)."""
        return len(self.length)

    @property
    def p(self) -> int:
        return self.X.shape[1]

    @property
    def n_events(self) -> int:
        """Total number of events."""
        return int(self.events.sum())

    @property
    def n_cases(self) -> int:
        """Number of distinct cases (with or without events)."""
        return len(pd.unique(self.case))

    def to_frame(self) -> pd.DataFrame:
        """The eras as a DataFrame (case, length, events, exposures densified): small data."""
        frame = pd.DataFrame({"case": self.case, "length": self.length, "events": self.events})
        return pd.concat([frame, pd.DataFrame(self.X.toarray(), columns=self.names)], axis=1)

    def __repr__(self):
        return (f"SccsData(eras={self.n:,}, cases={self.n_cases:,}, events={self.n_events:,}, "
                f"p={self.p:,})")


def _frozen(values, dtype=None):
    out = np.array(values, dtype=dtype)
    out.flags.writeable = False
    return out


def _study_window(sta, end, once, expo, ids, naive_period, min_age, max_age):
    """Each case's observation cut to its study window; events outside it and cases left
    without events leave (counted, with a DataWarning); case codes renumbered."""
    for name, value in (("naive_period", naive_period), ("min_age", min_age),
                        ("max_age", max_age)):
        if value is not None and not (np.isfinite(value) and float(value).is_integer()):
            raise CohortError(f"{name}={value!r}: give a whole number of days.")
    lo = np.maximum(sta + naive_period, -np.inf if min_age is None else float(min_age))
    hi = np.minimum(end, np.inf if max_age is None else float(max_age))
    c, t = once["c"].to_numpy(), once["t"].to_numpy()
    inside = (t >= lo[c]) & (t <= hi[c])
    keep = np.zeros(sta.size, bool)
    keep[c[inside]] = True
    keep &= lo <= hi
    new = np.full(sta.size, -1)
    new[keep] = np.arange(int(keep.sum()))
    left_out = {"events": int((~inside).sum()), "cases": int((~keep).sum())}
    if left_out["events"] or left_out["cases"]:
        warnings.warn(f"{left_out['events']} event(s) outside the study window (naive period "
                      f"{naive_period} days, ages {min_age} to {max_age}) and "
                      f"{left_out['cases']} case(s) left without events were left out; see "
                      "SccsData.source['left_out'].", DataWarning, stacklevel=3)
    once = pd.DataFrame({"c": new[c[inside]], "t": t[inside]})
    expo = expo[new[expo["case"].to_numpy(np.int64)] >= 0]
    expo = expo.assign(case=new[expo["case"].to_numpy(np.int64)])
    return lo[keep], hi[keep], once, expo, np.asarray(ids)[keep], left_out


def _numeric(series, name, role, labels=None):
    """A numeric or boolean column as float64; anything else is a CohortError."""
    if ptypes.is_bool_dtype(series) or ptypes.is_numeric_dtype(series):
        out = series.to_numpy(dtype=np.float64, na_value=np.nan)
        v.check_finite(out, name, role, labels)
        return out
    raise CohortError(f"column {name!r} ({role}) is not numeric (dtype {series.dtype}). Cast "
                      "it to numbers, or one-hot encode a text exposure into 0/1 columns.")


def _days(series, name, role, labels):
    """Whole days as float64 (formatdata's unit): finite and integer-valued."""
    out = _numeric(series, name, role, labels)
    v.fail_rows(out != np.round(out), out, name, role, "fractions of a day",
                "SCCS counts whole days (as R SCCS): round the ages or dates to days.", labels)
    return out


def _exposure_rows(df, codes, start_col, end_col, labels):
    """(case code, drug, start, end) of every exposed row of one drug column."""
    if not ptypes.is_numeric_dtype(df[start_col]):
        raise CohortError(f"column {start_col!r} (exposure_start) is not numeric (dtype "
                          f"{df[start_col].dtype}); give exposure days as numbers, NaN where "
                          "a row has no exposure.")
    start = df[start_col].to_numpy(dtype=np.float64, na_value=np.nan)
    has = np.isfinite(start)
    v.fail_rows(has & (start != np.round(start)), start, start_col, "exposure_start",
                "fractions of a day", "Round exposure days to whole days.", labels)
    end = np.full(len(df), np.nan)
    if end_col is not None:
        end = df[end_col].to_numpy(dtype=np.float64, na_value=np.nan)
        v.fail_rows(has & ~np.isfinite(end), end, end_col, "exposure_end",
                    "a missing end where the exposure has a start",
                    "Give every exposure an end day, or drop its start.", labels)
        v.fail_rows(has & (end < start), end, end_col, "exposure_end",
                    f"an end before the start ({start_col!r})",
                    "An exposure ends on or after the day it starts.", labels)
    return pd.DataFrame({"case": codes[has], "drug": str(start_col), "start": start[has],
                         "end": end[has]})


def _long_exposures(table, ids):
    """A long exposure table (case, drug, start[, end]) with case ids mapped to codes."""
    if not isinstance(table, pd.DataFrame):
        raise CohortError("exposures must be a DataFrame with columns case, drug, start "
                          "(and optionally end).")
    v.check_columns_exist(table.columns, [("exposures", c) for c in ("case", "drug", "start")])
    codes = pd.Index(ids).get_indexer(table["case"])
    v.fail_rows(codes < 0, table["case"].to_numpy(dtype=object), "case", "exposures",
                "cases without events or observation", "Exposures of people who are not "
                "cases do not enter an SCCS: drop them.", table.index.to_numpy())
    start = _days(table["start"], "start", "exposures", table.index.to_numpy())
    end = (table["end"].to_numpy(dtype=np.float64, na_value=np.nan) if "end" in table
           else np.full(len(table), np.nan))
    return pd.DataFrame({"case": codes, "drug": table["drug"].astype(str).to_numpy(),
                         "start": start, "end": end})


def _offset(value, drug):
    """("start", k) or ("end", k) for a window offset: an integer or "end[+-k]"."""
    if isinstance(value, str):
        m = _END.match(value.strip())
        if m is None:
            raise CohortError(f"risk window offset {value!r} of {drug!r} is not understood; "
                              "use a whole number of days or 'end', 'end+k', 'end-k'.")
        k = int(m.group(2) or 0)
        return "end", -k if m.group(1) == "-" else k
    if not float(value).is_integer():
        raise CohortError(f"risk window offset {value!r} of {drug!r} is not a whole number "
                          "of days.")
    return "start", int(value)


def _windows(risk_windows, drugs, with_end):
    """Drug -> list of windows, each ((anchor, k), (anchor, k)); checked per drug."""
    if risk_windows is None:
        risk_windows = {}
    if not isinstance(risk_windows, dict):
        risk_windows = {d: risk_windows for d in drugs}
    unknown = sorted(set(risk_windows) - set(drugs))
    if unknown:
        raise CohortError(f"risk_windows names {unknown}, which have no exposures; known "
                          f"drugs: {drugs[:20]}.")
    out = {}
    for d in drugs:
        ws = risk_windows.get(d)
        if ws is None:
            if d not in with_end:
                raise CohortError(f"drug {d!r} has no risk window and no exposure end; pass "
                                  f"risk_windows={{{d!r}: [(0, 42)]}} or an exposure end.")
            ws = [(0, "end")]
        parsed = [(_offset(a, d), _offset(b, d)) for a, b in ws]
        if any(a[0] == "end" or b[0] == "end" for a, b in parsed) and d not in with_end:
            raise CohortError(f"a risk window of {d!r} is anchored at the exposure end, but "
                              f"{d!r} has no end; pass exposure_end={{{d!r}: column}}.")
        starts = [a for a, _ in parsed]
        same_anchor = len({anchor for anchor, _ in starts}) == 1
        if same_anchor and (starts != sorted(starts) or len(set(starts)) != len(starts)):
            raise CohortError(f"the risk windows of {d!r} must be given in increasing order "
                              f"of their start, without repeats: {ws}.")
        out[d] = list(zip([tuple(w) for w in ws], parsed))
    return out


def _window_name(drug, raw):
    a, b = raw
    return f"{drug}[{a},{b}]"


def _window_intervals(expo, windows, drugs):
    """Inclusive day intervals (case, lo, hi, column) of every exposure's risk windows.

    A window ends the day before the next window of the same exposure, or the next exposure
    of the same drug, opens (formatdata's rule), so a drug's windows never overlap."""
    names, parts = [], []
    expo = expo.sort_values(["case", "drug", "start"], kind="stable", ignore_index=True)
    case = expo["case"].to_numpy(np.int64)
    drug = expo["drug"].to_numpy()
    start = expo["start"].to_numpy(np.float64)
    end = expo["end"].to_numpy(np.float64)
    same_next = np.zeros(len(expo), bool)
    same_next[:-1] = (case[1:] == case[:-1]) & (drug[1:] == drug[:-1])
    rows_of = expo.groupby("drug", sort=False).indices
    for d in drugs:
        rows = rows_of.get(d, np.zeros(0, np.int64))
        ws = windows[d]
        anchor = {"start": start[rows], "end": end[rows]}
        opens = [anchor[a[0]] + a[1] for _, (a, _b) in ws]
        nxt = np.full(rows.size, np.inf)              # the next exposure's first window opens
        follow = same_next[rows]
        nxt[follow] = np.roll(opens[0], -1)[follow]
        for w, (raw, (_a, b)) in enumerate(ws):
            hi = anchor[b[0]] + b[1]
            limit = nxt if w + 1 == len(ws) else np.minimum(nxt, opens[w + 1])
            hi = np.minimum(hi, limit - 1)
            parts.append((case[rows], opens[w], hi, np.full(rows.size, len(names))))
            names.append(_window_name(d, raw))
    if not parts:
        return [np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64)], names
    return [np.concatenate(p) for p in zip(*parts)], names


def _age_intervals(age_cuts, sta, end, first_column):
    """Age group g (g >= 1) of every case as an inclusive interval; groups start on the cut."""
    cuts = np.asarray(age_cuts, np.float64)
    if cuts.ndim != 1 or not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0) \
            or np.any(cuts != np.round(cuts)):
        raise CohortError(f"age_cuts must be increasing whole days, got {list(age_cuts)}.")
    n, g = sta.size, cuts.size
    upper = np.append(cuts[1:] - 1, np.inf)
    case = np.repeat(np.arange(n), g)
    lo = np.tile(cuts, n)
    hi = np.tile(upper, n)
    col = np.tile(np.arange(g) + first_column, n)
    labels = [f"age[{int(c)},{'inf' if np.isinf(u) else int(u)})"
              for c, u in zip(cuts, np.append(cuts[1:], np.inf))]
    return [case, lo, hi, col], labels


def _sweep(sta, end, codes, t, intervals, p):
    """The eras: every case's cut points sorted once, an era between consecutive cuts.

    Cut points are 'last day before' marks: sta - 1, end, lo - 1 and hi of every interval, so
    era (c_{m-1}, c_m] holds the days c_{m-1} + 1 .. c_m and lasts c_m - c_{m-1} days.
    """
    case, lo, hi, col = intervals
    lo = np.maximum(lo, sta[case])
    hi = np.minimum(hi, end[case])
    keep = lo <= hi
    case, lo, hi, col = case[keep], lo[keep], hi[keep], col[keep]
    n_cases = sta.size
    base = int(sta.min()) - 1
    span = int(end.max()) - base + 2
    if float(span) * n_cases > 2.0 ** 62:
        raise CohortError("the days span too wide a range for this many cases; count days from "
                          "a later origin.")

    def key(c, day):
        return np.asarray(c, np.int64) * span + (np.asarray(day).astype(np.int64) - base)

    every_case = np.arange(n_cases)
    keys = np.sort(np.concatenate([key(every_case, sta - 1), key(every_case, end),
                                   key(case, lo - 1), key(case, hi)]))
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    cut_case = keys // span
    cut = (keys - cut_case * span + base).astype(np.float64)
    era_pos = np.flatnonzero(cut_case[1:] == cut_case[:-1]) + 1      # era ends at cut[m]
    era_case = cut_case[era_pos]
    length = cut[era_pos] - cut[era_pos - 1]
    # cut position m -> era number: case c holds one more cut than eras
    event_pos = np.searchsorted(keys, key(codes, t), side="left")
    events = np.bincount(event_pos - codes - 1, minlength=era_pos.size)
    first = np.searchsorted(keys, key(case, lo), side="left") - case - 1
    last = np.searchsorted(keys, key(case, hi), side="left") - case - 1
    counts = last - first + 1
    rows = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    X = sp.csc_matrix((np.ones(rows.size), (rows, np.repeat(col, counts))),
                      shape=(era_pos.size, p))
    return era_case, length, events.astype(np.float64), X


def _no_contrast(X, names, codes):
    """Columns constant within every case: their effect cancels from the conditional
    likelihood."""
    if X.shape[1] == 0:
        return {}
    size = np.bincount(codes).astype(np.float64)
    total, between = _within_case_sums(X.indptr.astype(np.int64), X.indices, X.data,
                                       codes.astype(np.int64), size)
    flat = total - between <= 1e-12 * np.maximum(total, 1e-300)
    return {names[j]: "constant within every case" for j in np.flatnonzero(flat)}


@njit(cache=True)
def _within_case_sums(indptr, indices, data, codes, size):
    """Per column j: sum of x^2, and sum over cases of (sum of x in the case)^2 / case size;
    their difference is the within-case sum of squares.  O(nnz), one pass."""
    p = indptr.size - 1
    acc = np.zeros(size.size)
    stamp = np.full(size.size, -1)
    touched = np.empty(indices.size, np.int64)
    total = np.zeros(p)
    between = np.zeros(p)
    for j in range(p):
        count = 0
        for t in range(indptr[j], indptr[j + 1]):
            c = codes[indices[t]]
            if stamp[c] != j:
                stamp[c] = j
                acc[c] = 0.0
                touched[count] = c
                count += 1
            acc[c] += data[t]
            total[j] += data[t] * data[t]
        for b in range(count):
            c = touched[b]
            between[j] += acc[c] * acc[c] / size[c]
    return total, between
