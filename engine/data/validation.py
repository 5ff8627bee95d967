"""Checks that turn raw cohort arrays into trusted ones, or raise a CohortError that says why.

Every check is vectorised NumPy so a cohort of millions of rows validates in well under a second.
Messages name the column and its role, show the first offending rows (by index label) with their
values, and say how to fix the data.
"""
import difflib
import hashlib
import re

import numpy as np
import pandas as pd

from ..core.errors import CohortError

SHOWN_ROWS = 5
MAX_COVARIATE = 1e150     # beyond this x^2 (in every information matrix) overflows float64
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}([,'\u00a0 ]\d{3})+([.]\d+)?$")
_DATE = re.compile(r"^(\d{4}-\d{1,2}-\d{1,2}([ T].*)?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})$")


def _show(value):
    """repr() of a value without NumPy's type wrapper (np.float64(1.0) -> 1.0)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def describe_rows(positions, values, labels=None, show=_show):
    """Text listing the first offending rows, e.g. "row 3 = -1.0, row 17 = nan (and 4 more)".

    Parameters
    ----------
    positions : ndarray of int, shape (k,)
        0-based positions of all offending rows.
    values : array-like, shape (k,)
        The offending values, aligned with ``positions``.
    labels : ndarray, shape (n,), optional
        Row labels to print (a DataFrame's index); positions are printed when None.
    show : callable
        Formats a value (repr without NumPy's wrapper by default).
    """
    shown = []
    for pos, value in zip(positions[:SHOWN_ROWS], values[:SHOWN_ROWS]):
        label = pos if labels is None else _show(labels[pos])
        shown.append(f"row {label} = {show(value)}")
    text = ", ".join(shown)
    if len(positions) > SHOWN_ROWS:
        text += f" (and {len(positions) - SHOWN_ROWS} more)"
    return text


def fail_rows(bad, values, name, role, problem, fix, labels=None):
    """Raise a CohortError for the rows where ``bad`` is True, if there are any."""
    if bad.any():
        positions = np.flatnonzero(bad)
        raise CohortError(
            f"column {name!r} ({role}) has {len(positions)} row(s) with {problem}: "
            f"{describe_rows(positions, values[positions], labels)}. {fix}"
        )


def check_columns_exist(available, wanted):
    """Raise if a column named for a role is missing, suggesting close matches.

    Parameters
    ----------
    available : sequence of column names in the data.
    wanted : list of (role, column name) pairs.
    """
    available = list(available)
    as_text = [str(c) for c in available]
    for role, column in wanted:
        if column in available:
            continue
        close = difflib.get_close_matches(str(column), as_text, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = f" The data has columns {as_text}." if len(as_text) <= 30 else ""
        raise CohortError(
            f"column {column!r} ({role}) is not in the data.{hint}{listing} "
            "Pass the name of an existing column."
        )


def check_finite(values, name, role, labels=None):
    """Raise if a numeric role column holds NaN or +-inf."""
    fail_rows(~np.isfinite(values), values, name, role, "missing or infinite values",
              "Remove or impute these rows before building the cohort (missing values: "
              'missing="drop" drops them).', labels)


def check_times(time, start, names, labels=None):
    """Check follow-up times: positive without entry times; 0 <= start < stop with them."""
    check_finite(time, names["time"], "time", labels)
    if start is None:
        fail_rows(time <= 0, time, names["time"], "time", "time <= 0",
                  "Follow-up times must be positive: correct these rows or remove them "
                  "(a subject who leaves on the day of entry is often given a time of 0.5).",
                  labels)
        return
    check_finite(start, names["start"], "start", labels)
    fail_rows(start < 0, start, names["start"], "start", "negative entry times",
              "Entry times are measured from the time origin and must be >= 0.", labels)
    bad = start >= time
    if bad.any():
        positions = np.flatnonzero(bad)
        first = positions[:SHOWN_ROWS]
        pairs = [f"({a!r}, {b!r}]" for a, b in zip(start[first].tolist(), time[first].tolist())]
        raise CohortError(
            f"column {names['start']!r} (start) has {len(positions)} row(s) with start >= stop "
            f"({names['time']!r}): {describe_rows(positions, pairs, labels, str)}. Each "
            "(start, stop] episode needs start < stop: remove zero-length episodes, or when an "
            "event happens at entry move the start back (R's heart data moves it by 0.5 day)."
        )


def check_episodes(ids, start, stop, names, labels=None):
    """Raise if two (start, stop] episodes of one subject overlap.

    Each subject's episodes are sorted by start; episode k overlaps when start_k < stop_{k-1}.
    """
    codes, _ = pd.factorize(ids)
    order = np.lexsort((start, codes))
    same = codes[order][1:] == codes[order][:-1]
    overlap = same & (start[order][1:] < stop[order][:-1])
    if overlap.any():
        later = order[1:][overlap]
        earlier = order[:-1][overlap]
        shown = []
        for i, j in zip(later[:SHOWN_ROWS], earlier[:SHOWN_ROWS]):
            li, lj = (i, j) if labels is None else (_show(labels[i]), _show(labels[j]))
            shown.append(f"id {_show(ids[i])}: row {li} starts at {_show(start[i])} before "
                         f"row {lj} ends at {_show(stop[j])}")
        more = f" (and {len(later) - SHOWN_ROWS} more)" if len(later) > SHOWN_ROWS else ""
        raise CohortError(
            f"column {names['id']!r} (id) has {len(later)} overlapping episode(s): "
            f"{'; '.join(shown)}{more}. A subject is at risk once at any time: split or "
            "correct the episodes so that each starts at or after the previous one stops."
        )


def check_events(event, competing_risks, name, labels=None):
    """Return event codes as int64 after checking they are 0/1 (0..k for competing risks).

    Parameters
    ----------
    event : ndarray of float64, shape (n,)
    competing_risks : bool
        Allow codes above 1 (one per cause).
    """
    check_finite(event, name, "event", labels)
    fail_rows(event != np.round(event), event, name, "event", "non-integer codes",
              "Event codes are whole numbers: 0 = censored, 1 = event (1..k = causes when "
              "competing_risks=True).", labels)
    fail_rows(event < 0, event, name, "event", "negative codes",
              "Use 0 for censored rows and positive codes for events.", labels)
    if not competing_risks:
        fail_rows(event > 1, event, name, "event", "codes other than 0/1",
                  "Recode events to 1, or pass competing_risks=True if the codes are causes "
                  "of competing events.", labels)
    if not (event > 0).any():
        raise CohortError(
            f"column {name!r} (event) has no events: all rows are censored (every code is 0). "
            "Check that the right column was named as event and that events are coded > 0."
        )
    return event.astype(np.int64)


def check_binary_outcome(event, name, labels=None):
    """Raise unless the codes of a binary outcome are 0/1 with both values present."""
    fail_rows((event != 0) & (event != 1), event, name, "outcome", "codes other than 0/1",
              "A binary outcome is coded 0 (no) / 1 (yes): recode these rows.", labels)
    for value in (0, 1):
        if not (event == value).any():
            raise CohortError(f"column {name!r} (outcome) is {1 - value} in every row; a binary "
                              "outcome needs both 0s and 1s: check the column or the filter "
                              "that made the data.")


def check_weights(weights, name, labels=None):
    """Check case weights: finite, non-negative, not all zero."""
    check_finite(weights, name, "weights", labels)
    fail_rows(weights < 0, weights, name, "weights", "negative weights",
              "Case weights must be >= 0.", labels)
    if not (weights > 0).any():
        raise CohortError(f"column {name!r} (weights) is zero in every row. "
                          "Give at least one row a positive weight.")


def check_no_missing(values, name, role, labels=None):
    """Raise if a column of any type (ids, strata, text) holds missing values."""
    bad = np.asarray(pd.isna(values))
    if bad.any():
        fail_rows(bad, np.asarray(values, dtype=object), name, role, "missing values",
                  "Remove or fill in these rows before building the cohort, or pass "
                  'missing="drop" for a complete-case analysis.', labels)


def drop_missing(df, columns, missing):
    """The rows of ``df`` complete in ``columns`` and {column: rows dropped}, when ``missing``
    is "drop"; ``df`` unchanged and {} when it is "raise" (the role checks refuse the rows)."""
    if missing not in ("raise", "drop"):
        raise ValueError(f'missing must be "raise" or "drop", got {missing!r}')
    if missing == "raise":
        return df, {}
    absent = df[columns].isna()
    counts = absent.sum()
    dropped = {str(column): int(count) for column, count in counts.items() if count}
    if not dropped:
        return df, {}
    complete = ~absent.any(axis=1).to_numpy()
    if not complete.any():
        raise CohortError(f"every row misses a value in one of {list(dropped)} (missing "
                          f"per column: {dropped}); nothing is left for a complete-case "
                          "analysis. Leave the emptiest columns out or impute them.")
    return df[complete], dropped


def check_covariates_finite(X, names, labels=None):
    """Raise, naming every bad column, if the CSC matrix X holds NaN or +-inf.

    Parameters
    ----------
    X : scipy.sparse.csc_matrix, shape (n, p)
    names : list of str, length p
    """
    if np.isfinite(X.data.sum()):
        return  # a finite sum has no NaN or inf among its terms; only overflow needs a look
    bad = np.flatnonzero(~np.isfinite(X.data))
    if len(bad) == 0:
        return
    columns = np.searchsorted(X.indptr, bad, side="right") - 1
    parts = []
    for j in np.unique(columns):
        entries = bad[columns == j]
        rows = describe_rows(X.indices[entries], X.data[entries], labels)
        parts.append(f"{names[j]!r} ({len(entries)} row(s): {rows})")
    raise CohortError(
        f"{len(parts)} covariate column(s) have missing or infinite values: "
        f"{'; '.join(parts)}. Remove or impute these rows, or leave the columns out (for a "
        'complete-case analysis pass missing="drop" to Cohort.from_frame).'
    )


def check_covariates_scale(X, names, labels=None):
    """Raise, naming the column, where |x| > 1e150: x^2 overflows in the information."""
    if X.data.size == 0 or (X.data.max() <= MAX_COVARIATE and X.data.min() >= -MAX_COVARIATE):
        return      # no |x| temporary: 4.5 GB at 10^7 rows x 1,000 columns at 5%
    bad = np.flatnonzero(np.abs(X.data) > MAX_COVARIATE)
    if len(bad) == 0:
        return
    columns = np.searchsorted(X.indptr, bad, side="right") - 1
    j = columns[0]
    entries = bad[columns == j]
    raise CohortError(
        f"covariate {names[j]!r} has {len(entries)} value(s) beyond +-{MAX_COVARIATE:g}: "
        f"{describe_rows(X.indices[entries], X.data[entries], labels)}. Their squares overflow "
        "in the fit: rescale the column (e.g. log, or thousands) or correct the values.")


def check_flat(series, name, role, labels=None):
    """Raise if an object column holds nested values (lists, arrays, dicts: e.g. a Parquet list
    or struct column), which cannot be a number or a category."""
    if series.dtype != object or pd.api.types.infer_dtype(series, skipna=True) in (
            "string", "bytes", "integer", "floating", "mixed-integer-float", "decimal",
            "boolean", "empty"):
        return                       # a C scan settles the common cases; no per-value call
    nested = series.map(lambda value: isinstance(value, (list, tuple, dict, set, np.ndarray)))
    fail_rows(nested.to_numpy(dtype=bool), series.to_numpy(dtype=object), name, role,
              "nested values (lists or records)",
              "Flatten the column first (one value per row), or leave it out.", labels)


def check_not_number_like(levels, name, labels=None):
    """Raise if most text levels of a covariate are numbers with thousands separators or dates,
    which would otherwise be one-hot encoded as categories."""
    text = [str(level).strip() for level in levels]
    for pattern, what, fix in (
            (_THOUSANDS, "numbers written with thousands separators (e.g. '1,234')",
             f"pd.to_numeric(df[{name!r}].str.replace(',', ''))"),
            (_DATE, "dates written as text",
             f"(pd.to_datetime(df[{name!r}]) - origin).dt.days")):
        matches = [t for t in text if pattern.match(t)]
        if len(matches) > len(text) / 2:
            raise CohortError(f"column {name!r} (covariate) holds {what}: {matches[:3]}; as "
                              "text it would be one category per value. Convert it to "
                              f"numbers first, e.g. {fix}.")


def _nonempty_reduce(ufunc, values, X, dtype=None):
    """ufunc.reduceat over each column's stored values (0 for empty columns); shape (p,)."""
    nnz = np.diff(X.indptr)
    out = np.zeros(X.shape[1], dtype=dtype or values.dtype)
    if X.nnz:
        out[nnz > 0] = ufunc.reduceat(values, X.indptr[:-1][nnz > 0], dtype=dtype)
    return out


def redundant_columns(X, names):
    """Find constant columns and exact duplicates of an earlier column.

    X must be canonical CSC (sorted indices, no duplicates, no explicit zeros), so two columns
    are equal exactly when their stored indices and values are. Equal columns share a cheap
    vectorised key (count, first and last row, sum of values: one pass over the values, none
    over the row indices); only columns whose keys collide are hashed byte by byte.

    Returns
    -------
    dict
        column name -> reason ("constant" or "duplicate of <name>"), in column order.
    """
    n, p = X.shape
    nnz = np.diff(X.indptr)
    smallest = _nonempty_reduce(np.minimum, X.data, X)
    largest = _nonempty_reduce(np.maximum, X.data, X)
    constant = (nnz == 0) | ((nnz == n) & (smallest == largest))
    stored = nnz > 0
    first, last = np.full(p, -1), np.full(p, -1)
    first[stored] = X.indices[X.indptr[:-1][stored]]
    last[stored] = X.indices[X.indptr[1:][stored] - 1]
    keys = pd.DataFrame({"nnz": nnz, "first": first, "last": last,
                         "sum": _nonempty_reduce(np.add, X.data, X)})
    candidate = keys.duplicated(keep=False).to_numpy() & ~constant
    excluded = {names[j]: "constant" for j in np.flatnonzero(constant)}
    first_seen = {}
    for j in np.flatnonzero(candidate):
        a, b = X.indptr[j], X.indptr[j + 1]
        digest = hashlib.blake2b(X.indices[a:b], digest_size=16)
        digest.update(X.data[a:b])
        key = digest.digest()
        if key in first_seen:
            excluded[names[j]] = f"duplicate of {first_seen[key]}"
        else:
            first_seen[key] = names[j]
    return {name: excluded[name] for name in names if name in excluded}


def binary_columns(X):
    """True for each column of canonical CSC X whose values are only 0 and 1; shape (p,)."""
    return ~_nonempty_reduce(np.logical_or, X.data != 1, X)


def check_cluster(cluster):
    """The ``cluster`` option as a 1-D array (or None), with no missing values."""
    if cluster is None:
        return None
    if isinstance(cluster, str):
        raise ValueError(f"cluster must be one value per row of the cohort (e.g. df[{cluster!r}]"
                         "), not a column name: the cohort keeps no other columns.")
    values = np.asarray(cluster)
    if values.ndim != 1:
        raise ValueError(f"cluster must be one-dimensional (one value per row), got shape "
                         f"{values.shape}")
    fail_rows(np.asarray(pd.isna(values)), values, "cluster", "cluster", "a missing cluster",
              "Give every row a cluster (e.g. its own id), or drop those rows from the cohort.")
    return values
