"""SCCS eras from raw case histories: the machinery of SccsData.from_cases, modelled on R SCCS's
``formatdata`` (Farrington, Whitaker & Ghebremichael Weldeselassie 2018, "Self-controlled case
series studies: a modelling guide with R") and OHDSI's createSccsIntervalData.

Days are whole numbers and inclusive: an observation period from ``sta`` to ``end`` lasts
end - sta + 1 days, a risk window (a, b) after an exposure starting on day s covers days
s + a .. s + b ("end+k" offsets count from the exposure's end), and an age cut at day c starts a
new age group on day c.  A repeat exposure of a drug ends the previous exposure's windows the
day before its own first window opens (formatdata's rule), and every window is clipped to the
observation period.  The eras come from one sort of every case's cut points and one sweep
(``sweep``), with no loop over cases.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from pandas.api import types as ptypes

from ..data import validation as v
from ..core.errors import CohortError, DataWarning

_END = re.compile(r"^end\s*(?:([+-])\s*(\d+))?$")
DAY_LIMIT = 2**31 - 1      # about 5.9 million years of days: exact in float64, no overflow


def numeric(series, name, role, labels=None):
    """A numeric or boolean column as float64; anything else is a CohortError."""
    if ptypes.is_bool_dtype(series) or ptypes.is_numeric_dtype(series):
        out = series.to_numpy(dtype=np.float64, na_value=np.nan)
        v.check_finite(out, name, role, labels)
        return out
    raise CohortError(f"column {name!r} ({role}) is not numeric (dtype {series.dtype}). Cast "
                      "it to numbers, or one-hot encode a text exposure into 0/1 columns.")


def whole_days(series, name, role, labels):
    """Whole days as int64 (formatdata's unit): finite, integer-valued, within +/-DAY_LIMIT.

    Integer columns are read as integers (never through float64, which cannot hold every day
    number above 2**53)."""
    if ptypes.is_integer_dtype(series) and not series.isna().any():
        out = series.to_numpy(dtype=np.int64)
    else:
        out = numeric(series, name, role, labels)
        v.fail_rows(out != np.round(out), out, name, role, "fractions of a day",
                    "SCCS counts whole days (as R SCCS): round the ages or dates to days.", labels)
    check_day_range(out, name, role, labels)
    return out.astype(np.int64)


def check_day_range(days, name, role, labels):
    """A CohortError for day numbers beyond +/-DAY_LIMIT (NaN allowed: no exposure)."""
    with np.errstate(invalid="ignore"):
        v.fail_rows(np.abs(days) > DAY_LIMIT, days, name, role,
                    f"day numbers beyond +/-{DAY_LIMIT:,} (about 5.9 million years)",
                    "Count days from a nearer origin (days since birth, or since 1970); "
                    "nanosecond or second timestamps must be converted to days.", labels)


def exposure_rows(df, codes, start_col, end_col, labels):
    """(case code, drug, start, end) of every exposed row of one drug column."""
    if not ptypes.is_numeric_dtype(df[start_col]):
        raise CohortError(f"column {start_col!r} (exposure_start) is not numeric (dtype "
                          f"{df[start_col].dtype}); give exposure days as numbers, NaN where "
                          "a row has no exposure.")
    start = df[start_col].to_numpy(dtype=np.float64, na_value=np.nan)
    has = np.isfinite(start)
    v.fail_rows(has & (start != np.round(start)), start, start_col, "exposure_start",
                "fractions of a day", "Round exposure days to whole days.", labels)
    check_day_range(start, start_col, "exposure_start", labels)
    end = np.full(len(df), np.nan)
    if end_col is not None:
        end = df[end_col].to_numpy(dtype=np.float64, na_value=np.nan)
        v.fail_rows(has & ~np.isfinite(end), end, end_col, "exposure_end",
                    "a missing end where the exposure has a start",
                    "Give every exposure an end day, or drop its start.", labels)
        v.fail_rows(has & (end < start), end, end_col, "exposure_end",
                    f"an end before the start ({start_col!r})",
                    "An exposure ends on or after the day it starts.", labels)
        v.fail_rows(has & (end != np.round(end)), end, end_col, "exposure_end",
                    "fractions of a day", "Round exposure days to whole days.", labels)
        check_day_range(np.where(has, end, np.nan), end_col, "exposure_end", labels)
    return pd.DataFrame({"case": codes[has], "drug": str(start_col), "start": start[has],
                         "end": end[has]})


def long_exposures(table, ids):
    """A long exposure table (case, drug, start[, end]) with case ids mapped to codes."""
    if not isinstance(table, pd.DataFrame):
        raise CohortError("exposures must be a DataFrame with columns case, drug, start "
                          "(and optionally end).")
    v.check_columns_exist(table.columns, [("exposures", c) for c in ("case", "drug", "start")])
    codes = pd.Index(ids).get_indexer(table["case"])
    v.fail_rows(codes < 0, table["case"].to_numpy(dtype=object), "case", "exposures",
                "cases without events or observation", "Exposures of people who are not "
                "cases do not enter an SCCS: drop them.", table.index.to_numpy())
    start = whole_days(table["start"], "start", "exposures", table.index.to_numpy())
    end = (table["end"].to_numpy(dtype=np.float64, na_value=np.nan) if "end" in table
           else np.full(len(table), np.nan))
    labels = table.index.to_numpy()
    v.fail_rows(np.isfinite(end) & (end < start), end, "end", "exposures",
                "an end before the start", "An exposure ends on or after the day it starts.",
                labels)
    v.fail_rows(np.isfinite(end) & (end != np.round(end)), end, "end", "exposures",
                "fractions of a day", "Round exposure days to whole days.", labels)
    check_day_range(end, "end", "exposures", labels)
    return pd.DataFrame({"case": codes, "drug": table["drug"].astype(str).to_numpy(),
                         "start": start, "end": end})


def merge_overlaps(expo):
    """Exposures of one case and drug whose days overlap, as one exposure over their union.

    Rows with an end are sorted by start; a row starting on or before the latest end so far
    joins that exposure (OHDSI's rule; two rows on the same start day always join), which then
    ends on the latest of their ends.  Rows without an end (start-anchored windows only) are
    kept as they are."""
    ended = expo["end"].notna().to_numpy()
    if not ended.any():
        return expo
    spans = expo[ended].sort_values(["case", "drug", "start", "end"], kind="stable",
                                    ignore_index=True)
    group = spans.groupby(["case", "drug"], sort=False)
    reach = group["end"].cummax()
    before = reach.groupby([spans["case"], spans["drug"]], sort=False).shift(1)
    opens = (before.isna() | (spans["start"] > before)).to_numpy()
    run = np.cumsum(opens)
    merged = spans.groupby(run, sort=False).agg(case=("case", "first"), drug=("drug", "first"),
                                                start=("start", "min"), end=("end", "max"))
    return pd.concat([expo[~ended], merged], ignore_index=True)


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


def parse_windows(risk_windows, drugs, with_end):
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
        for (a, b), raw in zip(parsed, ws):
            if a[0] == b[0] and a[1] > b[1]:
                raise CohortError(f"risk window {tuple(raw)} of {d!r} ends before it starts; "
                                  "give (first day, last day), e.g. (0, 42).")
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


def window_intervals(expo, windows, drugs):
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


def age_intervals(age_cuts, sta, end, first_column):
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


def study_window(sta, end, once, expo, ids, naive_period, min_age, max_age):
    """Each case's observation cut to its study window; events outside it and cases left
    without events leave (counted, with a DataWarning); case codes renumbered."""
    for name, value in (("naive_period", naive_period), ("min_age", min_age),
                        ("max_age", max_age)):
        if value is not None and not (np.isfinite(value) and float(value).is_integer()):
            raise CohortError(f"{name}={value!r}: give a whole number of days.")
        if value is not None and abs(value) > DAY_LIMIT:
            raise CohortError(f"{name}={value!r} is beyond +/-{DAY_LIMIT:,} days; give days "
                              "on the scale of the other columns.")
    lo = sta + int(naive_period or 0)
    if min_age is not None:
        lo = np.maximum(lo, int(min_age))
    hi = end if max_age is None else np.minimum(end, int(max_age))
    c, t = once["c"].to_numpy(), once["t"].to_numpy()
    inside = (t >= lo[c]) & (t <= hi[c])
    keep = np.zeros(sta.size, bool)
    keep[c[inside]] = True
    keep &= lo <= hi
    if not keep.any():
        raise CohortError(f"no event falls inside the study window (naive period "
                          f"{naive_period} days, ages {min_age} to {max_age}): widen it.")
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


def sweep(sta, end, codes, t, intervals, p):
    """The eras: every case's cut points sorted once, an era between consecutive cuts.

    Cut points are 'last day before' marks: sta - 1, end, lo - 1 and hi of every interval, so
    era (c_{m-1}, c_m] holds the days c_{m-1} + 1 .. c_m and lasts c_m - c_{m-1} days.  Days are
    int64 (intervals are clipped to the observation period first, so an open end is never
    cast).
    """
    case, lo, hi, col = intervals
    sta, end = np.asarray(sta, np.int64), np.asarray(end, np.int64)
    case = np.asarray(case, np.int64)
    lo = np.maximum(lo, sta[case])
    hi = np.minimum(hi, end[case])
    keep = lo <= hi
    case, col = case[keep], col[keep]
    lo, hi = lo[keep].astype(np.int64), hi[keep].astype(np.int64)
    n_cases = sta.size
    base = int(sta.min()) - 1
    span = int(end.max()) - base + 2
    if span * n_cases > 2 ** 62:
        raise CohortError("the days span too wide a range for this many cases; count days from "
                          "a later origin.")

    def key(c, day):
        return np.asarray(c, np.int64) * span + (np.asarray(day, np.int64) - base)

    every_case = np.arange(n_cases)
    keys = np.sort(np.concatenate([key(every_case, sta - 1), key(every_case, end),
                                   key(case, lo - 1), key(case, hi)]))
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    cut_case = keys // span
    cut = keys - cut_case * span + base
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
    return era_case, length, events, X
