"""SccsData: self-controlled case series eras, validated once (Suchard2013, sec. 2.1).

An era is a stretch of one case's observation time with constant exposure: the case id, the era
length l_ik (days), the number of events y_ik in it and the exposure indicators x_ik (sparse
CSC columns, one per drug or risk window).  Rows stay in the caller's order and are never
dropped: bad input raises a CohortError naming the column, the first bad rows and the fix.
Columns that carry no within-case contrast (constant in every case, or duplicates) are left out
with one DataWarning and recorded in ``excluded``: the conditional likelihood cannot see them.

``from_cases`` builds the eras from raw case histories as R SCCS's ``formatdata`` does
(inclusive days, int64 day numbers within +/-2**31; overlapping exposures of one drug count
their union, as OHDSI's; the rules and the one-sort sweep are in sccs_eras.py).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numba import njit

from . import eras
from ..data import validation as v
from ..core.errors import CohortError, DataWarning

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
            [eras.numeric(df[c], c, "covariate", labels) for c in covariates])
            if covariates else np.zeros((len(df), 0)))
        return cls._validated(
            case=df[case], length=eras.numeric(df[length], length, "length", labels),
            events=eras.numeric(df[events], events, "events", labels), X=X,
            names=[str(c) for c in covariates], labels=labels,
            role_names={"case": case, "length": length, "events": events},
            source={"origin": "DataFrame", "case": case, "length": length, "events": events,
                    "covariates": covariates})

    @classmethod
    def from_arrays(cls, case, length, events, X, names=None):
        """Eras from arrays and a scipy.sparse (or dense) design: Suchard2013's scale, never
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
            arrays[role] = eras.numeric(pd.Series(values), role, role)
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
        sta = eras.whole_days(df[obs_start], obs_start, "obs_start", labels)
        end = eras.whole_days(df[obs_end], obs_end, "obs_end", labels)
        t = eras.whole_days(df[event_times], event_times, "event_times", labels)
        v.fail_rows(sta > end, sta, obs_start, "obs_start", f"a start after {obs_end!r}",
                    "Each case's observation period must start on or before its last day.",
                    labels)
        first = np.zeros(len(ids), np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        for values, name, role in ((sta, obs_start, "obs_start"), (end, obs_end, "obs_end")):
            v.fail_rows(values != values[first][codes], values, name, role,
                        "values that differ between rows of one case",
                        "A case has one observation period: give every row of a case the same "
                        "value.", labels)
        sta, end = sta[first], end[first]
        v.fail_rows((t < sta[codes]) | (t > end[codes]), t, event_times, "event_times",
                    f"events outside the observation period [{obs_start}, {obs_end}]",
                    "Remove these events or widen the observation period; the SCCS "
                    "likelihood only counts events observed.", labels)

        long = [eras.exposure_rows(df, codes, c, exposure_end.get(c), labels)
                for c in exposure_start]
        if exposures is not None:
            long.append(eras.long_exposures(exposures, ids))
        expo = (pd.concat(long, ignore_index=True) if long else
                pd.DataFrame({"case": [], "drug": [], "start": [], "end": []}))
        expo = expo.drop_duplicates(ignore_index=True)
        drugs = list(dict.fromkeys(expo["drug"]))
        expo = eras.merge_overlaps(expo)
        once = pd.DataFrame({"c": codes, "t": t}).drop_duplicates()     # formatdata's unique()
        if first_event_only:
            once = once[once["t"] == once.groupby("c")["t"].transform("min")]
        windows = eras.parse_windows(risk_windows, drugs,
                                     set(expo.loc[expo["end"].notna(), "drug"]))
        left_out = {"events": 0, "cases": 0}
        if naive_period or min_age is not None or max_age is not None:
            sta, end, once, expo, ids, left_out = eras.study_window(
                sta, end, once, expo, ids, naive_period, min_age, max_age)
        intervals, names = eras.window_intervals(expo, windows, drugs)
        if age_cuts is not None and len(age_cuts):
            age_iv, age_names = eras.age_intervals(age_cuts, sta, end, len(names))
            intervals = [np.concatenate([a, b]) for a, b in zip(intervals, age_iv)]
            names += age_names
        era_case, length, events, X = eras.sweep(sta, end, once["c"].to_numpy(),
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
    def event(self) -> np.ndarray:
        """Whether each era holds an event: the row-level flag Cohort.event gives, for the
        checks shared with it (resampling, fit's arguments)."""
        return self.events > 0

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


@njit(cache=True, nogil=True)
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
