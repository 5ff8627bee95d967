"""The Cohort: survival data validated once at the boundary, so models never re-check it.

A cohort holds follow-up times (and entry times for counting-process episodes), event codes,
sparse CSC covariates with their names, strata codes, subject ids and case weights. Rows stay in
the caller's order and are never dropped silently: bad input raises a CohortError that names the
column, the first bad rows and the fix, and rows missing a value are dropped only when asked
(``missing="drop"``, counted in ``Cohort.dropped``). Covariates that cannot be estimated (constant columns, exact
duplicates) are excluded with one DataWarning and recorded in ``Cohort.excluded``.
"""
import copy
import os
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from pandas.api import types as ptypes

from . import validation as v
from .timefix import fixed_times
from ..core.errors import CohortError, DataWarning

MAX_LEVELS = 1000
NUMERIC_OBJECTS = {"integer", "floating", "mixed-integer-float", "decimal", "boolean"}


def _as_list(names):
    """None -> [], one name -> [name], a sequence of names -> list."""
    if names is None:
        return []
    if isinstance(names, (list, tuple)):
        return list(names)
    return [names]


def _frozen(values, dtype=None):
    """A read-only copy, so a cohort never aliases (or is changed through) the caller's arrays."""
    if values is None:
        return None
    out = np.array(values, dtype=dtype)
    out.flags.writeable = False
    return out


def _float_column(series, name, role, labels=None):
    """A numeric, boolean or number-like text column as float64, NaN where missing; shape (n,)."""
    if ptypes.is_datetime64_any_dtype(series) or ptypes.is_timedelta64_dtype(series):
        raise CohortError(
            f"column {name!r} ({role}) holds dates or durations. Convert it to a number first, "
            f"e.g. days since entry: (df[{name!r}] - df['entry_date']).dt.days."
        )
    if ptypes.is_bool_dtype(series) or ptypes.is_numeric_dtype(series):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    parsed = pd.to_numeric(series.astype(object), errors="coerce")
    v.fail_rows((parsed.isna() & series.notna()).to_numpy(), series.to_numpy(dtype=object),
                name, role, "text that is not a number",
                f"Clean these values or cast the column to numbers, e.g. "
                f"pd.to_numeric(df[{name!r}], errors='coerce'), then handle the missing values.",
                labels)
    return parsed.to_numpy(dtype=np.float64, na_value=np.nan)


def _is_text(series):
    """True for columns to one-hot encode: categorical, string, or object holding non-numbers."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return True
    if ptypes.is_object_dtype(series) or ptypes.is_string_dtype(series):
        return ptypes.infer_dtype(series, skipna=True) not in NUMERIC_OBJECTS
    return False


def _factor(series):
    """Level codes (n,) and level labels of a column without missing values.

    Categoricals keep their category order, numbers sort numerically, anything else sorts as
    text (as R sorts factor levels). Work is on the distinct values: cheap at millions of rows.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.cat.remove_unused_categories()
        return series.cat.codes.to_numpy(), _level_text(series.cat.categories)
    if ptypes.is_numeric_dtype(series) or ptypes.is_bool_dtype(series):
        codes, uniques = pd.factorize(series, sort=True)
        return codes, _level_text(uniques)
    codes, uniques = pd.factorize(series)
    text = np.array([str(value) for value in uniques], dtype=object)
    level_codes, levels = pd.factorize(text, sort=True)
    return level_codes[codes], list(levels)


def _text_codes(series, name, labels=None):
    """Level codes (n,) and level names of a text column; the first level is the reference."""
    v.check_no_missing(series, name, "covariate", labels)
    codes, levels = _factor(series)
    v.check_not_number_like(levels, name, labels)
    if not isinstance(series.dtype, pd.CategoricalDtype):
        is_number = pd.to_numeric(pd.Series(levels, dtype=object), errors="coerce").notna()
        is_number = is_number.to_numpy()[codes]
        if is_number.mean() > 0.5:
            v.fail_rows(~is_number, series.to_numpy(dtype=object), name, "covariate",
                        "text in an otherwise numeric column",
                        f"Clean these values or cast the column to numbers, e.g. "
                        f"pd.to_numeric(df[{name!r}], errors='coerce'), then handle the "
                        "missing values it leaves.", labels)
    if len(levels) > MAX_LEVELS:
        first = np.arange(min(len(series), v.SHOWN_ROWS))
        raise CohortError(
            f"column {name!r} (covariate) has {len(levels)} distinct text values, more than "
            f"{MAX_LEVELS}: {v.describe_rows(first, series.to_numpy(dtype=object), labels)}. "
            "It looks like an identifier or free text: leave it out of the covariates, group "
            "its levels, or cast it to numbers if it holds numbers."
        )
    return codes, levels


def _one_hot(codes, n_levels):
    """CSC indicator columns (n, n_levels - 1) for levels 1.., level 0 being the reference."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=n_levels)
    indptr = np.concatenate([[0], np.cumsum(counts[1:])])
    indices = order[counts[0]:]
    return sp.csc_matrix((np.ones(len(indices)), indices, indptr),
                         shape=(len(codes), n_levels - 1))


def _encode_covariates(df, covariates, labels):
    """Numeric and boolean columns as they are; text one-hot encoded as ``col[level]``.

    Returns
    -------
    X : scipy.sparse.csc_matrix, shape (n, p)
    names : list of str, length p
    reference_levels : dict, text column -> its reference level
    constant : list of text columns with a single level (no indicator column to make)
    """
    blocks, names, reference_levels, constant = [], [], {}, []
    for column in covariates:
        series = df[column]
        if _is_text(series):
            codes, levels = _text_codes(series, column, labels)
            if len(levels) == 1:
                constant.append(str(column))
                continue
            reference_levels[str(column)] = levels[0]
            blocks.append(_one_hot(codes, len(levels)))
            names += [f"{column}[{level}]" for level in levels[1:]]
        else:
            values = _float_column(series, column, "covariate", labels)
            blocks.append(sp.csc_matrix(values[:, None]))
            names.append(str(column))
    if not blocks:
        return sp.csc_matrix((len(df), 0)), names, reference_levels, constant
    return sp.hstack(blocks, format="csc"), names, reference_levels, constant


def _level_text(uniques):
    """Level labels as text; whole-number floats print without '.0' (site=3, not site=3.0)."""
    values = np.asarray(uniques)
    if values.dtype.kind == "f" and np.all(values == np.round(values)):
        values = values.astype(np.int64)
    return [str(value) for value in values.tolist()]


def _code_strata(columns, values, labels=None):
    """Combine one or more strata columns into codes 0..K-1 and labels like "sex=1, site=3".

    Strata are numbered in sorted (lexicographic) order of their values.

    Parameters
    ----------
    columns : list of str, the strata column names.
    values : list of pandas Series, shape (n,) each.

    Returns
    -------
    codes : ndarray of int64, shape (n,)
    strata_labels : list of str, length K
    """
    key, parts = None, []
    for name, series in zip(columns, values):
        v.check_no_missing(series, name, "strata", labels)
        if ptypes.is_numeric_dtype(series) and not ptypes.is_bool_dtype(series):
            v.check_finite(series.to_numpy(dtype=np.float64), name, "strata", labels)
        codes, levels = _factor(series)
        parts.append((name, codes, levels))
        # pairs (stratum so far, this level) in lexicographic order, renumbered 0..K-1
        key = codes if key is None else pd.factorize(key * len(levels) + codes, sort=True)[0]
    if len(parts) == 1:
        return key.astype(np.int64), parts[0][2]
    firsts = pd.Series(key).drop_duplicates()
    first = np.empty(len(firsts), dtype=np.int64)
    first[firsts.to_numpy()] = firsts.index.to_numpy()
    strata_labels = None
    for name, codes, text in parts:
        piece = f"{name}=" + pd.Series(text, dtype=object)[codes[first]].reset_index(drop=True)
        strata_labels = piece if strata_labels is None else strata_labels + ", " + piece
    return key.astype(np.int64), strata_labels.tolist()


def _check_roles(roles):
    """Raise if one column is given two roles (e.g. both time and covariate)."""
    seen = {}
    for role, column in roles:
        if column in seen:
            raise CohortError(f"column {column!r} is named both as {seen[column]} and as "
                              f"{role}; give each column one role.")
        seen[column] = role


def _array_column(values, name, role, n):
    """One of from_arrays' 1-d inputs as a pandas Series after checking its shape."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise CohortError(f"{role} array {name!r} has shape {values.shape}. Pass a 1-d array "
                          "with one entry per row.")
    if n is not None and len(values) != n:
        raise CohortError(f"{role} array {name!r} has shape {values.shape}, but the cohort has "
                          f"{n} rows (from time). Pass 1-d arrays of one length.")
    return pd.Series(values, copy=False)


def _as_csc(X, n):
    """X (any scipy.sparse format or a dense 2-d array) as canonical float64 CSC: sorted indices,
    no duplicates, no explicit zeros.

    A canonical CSC input shares the caller's arrays (copying 50M non-zeros costs seconds);
    a CSC input that needs fixing is copied first, so the caller's matrix is never changed.
    """
    if sp.issparse(X):
        shared = X.format == "csc"
        X = sp.csc_matrix(X, dtype=np.float64)
        if shared and not (X.has_canonical_format and np.all(X.data != 0)):
            X = X.copy()
    else:
        X = np.asarray(X)
        if X.ndim != 2 or X.dtype.kind not in "biuf":
            raise CohortError(f"X must be a scipy.sparse matrix or a 2-d numeric array; got "
                              f"shape {X.shape} of type {X.dtype}. Cast it to numbers first.")
        X = sp.csc_matrix(X.astype(np.float64))
    if X.shape[0] != n:
        raise CohortError(f"X has {X.shape[0]} rows but time has {n}. Pass one row of X per "
                          "row of time, in the same order.")
    X.sum_duplicates()
    X.eliminate_zeros()
    return X


class Cohort:
    """Validated survival data: the input of every model in survscan.

    Build one with ``from_frame``, ``from_arrays``, ``from_parquet`` or ``from_duckdb``.

    Attributes
    ----------
    time : ndarray of float64, shape (n,)
        Follow-up end (stop) time.
    start : ndarray of float64, shape (n,), or None
        Entry time of (start, stop] counting-process episodes.
    event : ndarray of int64, shape (n,)
        0 = censored, 1 = event; 1..k = causes with competing risks.
    X : scipy.sparse.csc_matrix of float64, shape (n, p)
        Covariates, sorted indices, no explicit zeros.
    names : list of str, length p
    binary : ndarray of bool, shape (p,)
        True where a covariate takes only the values 0 and 1.
    strata : ndarray of int64, shape (n,), or None
        Stratum codes 0..K-1.
    strata_labels : list of str, length K, or None
    strata_columns : tuple of str
    id : ndarray, shape (n,), or None
        Subject ids (one subject may have several episodes).
    weights : ndarray of float64, shape (n,), or None
        Non-negative case weights.
    reference_levels : dict
        Text column -> level left out of its one-hot encoding.
    excluded : dict
        Covariate name -> why it was left out ("constant", "duplicate of <name>").
    source : dict
        Role -> column name(s), and where the data came from.
    formula : engine.data.formula.ModelFormula or None
        The formula the covariates were built from (``from_frame(formula=...)``): the recipe
        ``design_matrix(newdata)`` applies to new rows.
    variables : dict
        Numeric variable -> its values per row, for those a formula reads only through a
        transform (a spline's or a polynomial's variable, which no column of X holds): what
        residuals are plotted against (engine.functional_form).
    dropped : dict
        Column -> rows dropped for a missing value there (``missing="drop"``; a row missing
        in two columns counts in both); ``n_dropped`` is the number of rows dropped.
    """

    def __init__(self, *, time, event, X, names, binary, start, strata, strata_labels,
                 strata_columns, id, weights, reference_levels, excluded, source,
                 competing_risks):
        self.time = _frozen(time, np.float64)
        self.start = _frozen(start, np.float64)
        self.event = _frozen(event, np.int64)
        self.X = X
        self.names = list(names)
        self.binary = _frozen(binary, bool)
        self.strata = _frozen(strata, np.int64)
        self.strata_labels = strata_labels
        self.strata_columns = tuple(strata_columns)
        self.id = _frozen(id)
        self.weights = _frozen(weights, np.float64)
        self.reference_levels = reference_levels
        self.excluded = excluded
        self.source = source
        self.dropped = {}
        self.formula = None
        self.variables = {}
        self._competing_risks = bool(competing_risks)

    @classmethod
    def from_frame(cls, df, time=None, event=None, covariates=None, strata=None, start=None,
                   id=None, weights=None, competing_risks=False, missing="raise", formula=None):
        """Build a cohort from a DataFrame with one row per subject or per episode.

        Parameters
        ----------
        df : pandas.DataFrame, shape (n, ...)
        time, event : str
            Columns of follow-up end (stop) time and event code (0 censored, 1 event;
            1..k causes when ``competing_risks``). ``time=None`` makes a binary-outcome
            cohort (logistic regression, the horseshoe probit sampler): ``event`` is then the
            0/1 outcome, both values must occur, and ``time`` is set to ones.  With a formula
            whose left side is ``Surv(time, event)`` they may be left out.
        covariates : list of str, optional
            Covariate columns; None takes every column not given another role. Numeric and
            boolean columns are used as they are; text and categorical columns are one-hot
            encoded as ``col[level]`` against their first level (``reference_levels``).
        strata : str or list of str, optional
            Strata column(s); several are combined into one stratum per distinct combination.
        start : str, optional
            Entry time of (start, stop] episodes; needs ``id``.
        id : str, optional
            Subject id column.
        weights : str, optional
            Non-negative case weights.
        competing_risks : bool
            Allow event codes 1..k, one per cause.
        missing : "raise" | "drop"
            What to do with rows missing a value (NaN, None) in a column given a role:
            refuse them (the default), or drop them (complete-case analysis) and report
            the counts in ``dropped``, ``n_dropped`` and ``source``.
        formula : str, optional
            The covariates as a formula instead of ``covariates``, e.g.
            ``"Surv(time, event) ~ age + sex * treat + ns(bmi, df=4) + strata(site)"``
            (engine/data/formula.py): splines, interactions, polynomials and categorical terms
            become named sparse columns; ``Surv(...)`` may stand for time/event(/start) and
            ``strata(...)`` for strata.  The cohort keeps it (``formula``), so
            ``design_matrix(newdata)`` rebuilds the same columns.
        """
        if not isinstance(df, pd.DataFrame):
            raise CohortError(f"from_frame needs a pandas DataFrame, got {type(df).__name__}. "
                              "Use Cohort.from_arrays for arrays.")
        model_formula = None
        if formula is not None:
            if covariates is not None:
                raise CohortError("give the covariates either as covariates=[...] or inside "
                                  "formula=, not both.")
            from .formula import ModelFormula  # formulaic loads only when asked

            model_formula = ModelFormula(formula)
            model_formula.check_columns(df)
            asked = {"time": time, "event": event, "start": start}
            for role, column in model_formula.outcome.items():
                if asked[role] is not None and asked[role] != column:
                    raise CohortError(f"{role}={asked[role]!r} differs from {column!r} in the "
                                      f"formula's Surv(...); give the {role} column once.")
                asked[role] = column
            time, event, start = asked["time"], asked["event"], asked["start"]
            strata = _as_list(strata) + model_formula.strata
            covariates = model_formula.variables
        if event is None:
            raise CohortError("from_frame needs event= (the event code column), or a formula "
                              "with Surv(time, event) on its left.")
        strata_columns = _as_list(strata)
        roles = [(role, column) for role, column in
                 (("time", time), ("event", event), ("start", start), ("id", id),
                  ("weights", weights)) if column is not None]
        roles += [("strata", column) for column in strata_columns]
        v.check_columns_exist(df.columns, roles)
        used = [column for _, column in roles]
        if covariates is None:
            covariates = [column for column in df.columns if column not in used]
        covariates = _as_list(covariates)
        v.check_columns_exist(df.columns, [("covariate", column) for column in covariates])
        repeated = sorted({str(c) for c in df.columns[df.columns.duplicated()]}
                          & {str(c) for c in used + covariates})
        if repeated:
            raise CohortError(f"the data has several columns named {repeated}. Rename them so "
                              "each name is unique.")
        _check_roles(roles + [("covariate", column) for column in covariates])
        if len(df) == 0:
            raise CohortError("the data has no rows. Check the filter or query that made it.")
        n_rows = len(df)
        df, dropped = v.drop_missing(df, list(dict.fromkeys(used + covariates)), missing)
        labels = df.index.to_numpy()
        for role, column in roles + [("covariate", column) for column in covariates]:
            v.check_flat(df[column], column, role, labels)
        role_names = dict(roles)
        if model_formula is None:
            X, names, reference_levels, constant = _encode_covariates(df, covariates, labels)
        else:
            for column in covariates:
                v.check_no_missing(df[column], column, "covariate", labels)
            X, names = model_formula.build(df)
            reference_levels, constant = {}, []
        cohort = cls._validated(
            time=None if time is None else _float_column(df[time], time, "time", labels),
            event=_float_column(df[event], event, "event", labels),
            start=None if start is None else _float_column(df[start], start, "start", labels),
            weights=(None if weights is None
                     else _float_column(df[weights], weights, "weights", labels)),
            id=None if id is None else df[id],
            strata=[df[column] for column in strata_columns],
            strata_columns=[str(column) for column in strata_columns],
            X=X, names=names, reference_levels=reference_levels,
            pre_excluded={column: "constant" for column in constant},
            competing_risks=competing_risks, labels=labels, role_names=role_names,
            source={"origin": "DataFrame", "time": time, "event": event, "start": start,
                    "id": id, "weights": weights, "strata": strata_columns,
                    "covariates": covariates, "dropped": dropped,
                    "n_dropped": n_rows - len(df),
                    **({} if formula is None else {"formula": formula})},
        )
        cohort.dropped = dropped
        cohort.formula = model_formula
        if model_formula is not None:
            cohort.variables = {column: df[column].to_numpy(np.float64)
                                for column in model_formula.ranges
                                if column not in cohort.names}
        return cohort

    @classmethod
    def from_arrays(cls, time, event, X, names=None, strata=None, start=None, id=None,
                    weights=None, competing_risks=False):
        """Build a cohort from arrays, for large sparse designs that never fit a DataFrame.

        Cheap at N = 1,000,000 and P = 1,000 sparse columns: X is never densified.

        Parameters
        ----------
        time, event : array-like, shape (n,)
            ``time=None``: a binary-outcome cohort, as in ``from_frame``.
        X : scipy.sparse matrix (any format) or ndarray, shape (n, p)
        names : list of str, length p, optional
            Covariate names; default ``x0 .. x{p-1}``.
        strata : array-like of shape (n,), or a list of such arrays (combined), optional
        start, id, weights : array-like, shape (n,), optional
        competing_risks : bool
        """
        first = "time" if time is not None else "event"
        n = len(_array_column(event if time is None else time, first, first, None))
        if n == 0:
            raise CohortError(f"the data has no rows ({first} is empty). Pass at least one row.")
        event = _array_column(event, "event", "event", n)
        if isinstance(strata, (list, tuple)) and strata and np.ndim(strata[0]) == 1:
            strata_values = list(strata)
            strata_columns = [f"strata{i}" for i in range(len(strata_values))]
        else:
            strata_values = [] if strata is None else [strata]
            strata_columns = ["strata"] * len(strata_values)
        strata_values = [_array_column(values, column, "strata", n)
                         for column, values in zip(strata_columns, strata_values)]
        X = _as_csc(X, n)
        names = [f"x{j}" for j in range(X.shape[1])] if names is None else [str(s) for s in names]
        if len(names) != X.shape[1]:
            raise CohortError(f"names has {len(names)} entries but X has {X.shape[1]} columns. "
                              "Pass one name per column of X.")
        repeated = sorted(set(pd.Index(names)[pd.Index(names).duplicated()]))
        if repeated:
            raise CohortError(f"names {repeated} appear more than once. Give every covariate "
                              "a unique name.")
        role_names = {role: role for role in ("time", "event", "start", "id", "weights")}
        optional = {role: None if values is None
                    else _float_column(_array_column(values, role, role, n), role, role)
                    for role, values in (("start", start), ("weights", weights))}
        return cls._validated(
            time=None if time is None else _float_column(_array_column(time, "time", "time", n),
                                                         "time", "time"),
            event=_float_column(event, "event", "event"),
            start=optional["start"], weights=optional["weights"],
            id=None if id is None else _array_column(id, "id", "id", n),
            strata=strata_values, strata_columns=strata_columns,
            X=X, names=names, reference_levels={}, pre_excluded={},
            competing_risks=competing_risks, labels=None, role_names=role_names,
            source={"origin": "arrays", "time": None if time is None else "time",
                    "event": "event",
                    **{role: None if values is None else role
                       for role, values in (("start", start), ("id", id), ("weights", weights))},
                    "strata": strata_columns, "covariates": names},
        )

    @classmethod
    def from_parquet(cls, path, time=None, event=None, covariates=None, strata=None, start=None,
                     id=None, weights=None, competing_risks=False, missing="raise",
                     formula=None):
        """Build a cohort from a Parquet file or dataset directory; see ``from_frame``.

        When covariates are given only the needed columns are read.
        """
        import pyarrow.dataset as ds

        columns = None
        if covariates is not None:
            roles = [(role, c) for role, c in (("time", time), ("event", event),
                                               ("start", start), ("id", id),
                                               ("weights", weights)) if c is not None]
            roles += [("strata", c) for c in _as_list(strata)]
            roles += [("covariate", c) for c in _as_list(covariates)]
            v.check_columns_exist(ds.dataset(path).schema.names, roles)
            columns = list(dict.fromkeys(column for _, column in roles))
        df = pd.read_parquet(path, columns=columns)
        cohort = cls.from_frame(df, time, event, covariates=covariates, strata=strata,
                                start=start, id=id, weights=weights,
                                competing_risks=competing_risks, missing=missing,
                                formula=formula)
        cohort.source.update(origin="parquet", path=str(path))
        return cohort

    @classmethod
    def from_duckdb(cls, connection, sql, time=None, event=None, covariates=None, strata=None,
                    start=None, id=None, weights=None, competing_risks=False, missing="raise",
                    formula=None):
        """Build a cohort from the result of a DuckDB query; see ``from_frame``.

        Parameters
        ----------
        connection : duckdb.DuckDBPyConnection, or the path of a .duckdb file (opened read-only)
        sql : str
            A query returning one row per subject or episode.
        """
        import duckdb

        own = isinstance(connection, (str, os.PathLike))
        if own and not os.path.isfile(connection):
            raise CohortError(f"the DuckDB file {str(connection)!r} does not exist. Check the "
                              "path, or pass an open duckdb connection.")
        try:
            con = duckdb.connect(str(connection), read_only=True) if own else connection
        except duckdb.Error as exc:
            raise CohortError(f"the DuckDB file {str(connection)!r} cannot be opened: {exc}. "
                              "Check that it is a DuckDB database.") from exc
        try:
            df = con.execute(sql).df()
        except duckdb.Error as exc:
            raise CohortError(f"the DuckDB query failed: {exc}. Fix the SQL (try it in the "
                              "DuckDB shell) and call again.") from exc
        finally:
            if own:
                con.close()
        cohort = cls.from_frame(df, time, event, covariates=covariates, strata=strata,
                                start=start, id=id, weights=weights,
                                competing_risks=competing_risks, missing=missing,
                                formula=formula)
        cohort.source.update(origin="duckdb", sql=sql)
        return cohort

    @classmethod
    def _validated(cls, *, time, event, start, weights, id, strata, strata_columns, X, names,
                   reference_levels, pre_excluded, competing_risks, labels, role_names, source):
        """Check every role, drop unusable covariates (one DataWarning) and build the cohort."""
        binary_outcome = time is None
        if binary_outcome:
            if start is not None:
                raise CohortError(f"start ({role_names['start']!r}) is given without time. A "
                                  "binary outcome has no follow-up: drop start=, or pass time=.")
            time = np.ones(len(event))
        else:
            v.check_times(time, start, role_names, labels)
            time, start = fixed_times(time, start, role_names, labels)
        if start is not None and id is None:
            raise CohortError(f"start ({role_names['start']!r}) is given without id. Episodes "
                              "of one subject must share an id: pass id= as well.")
        if id is not None:
            v.check_no_missing(id, role_names["id"], "id", labels)
            id = id.to_numpy()
            if start is not None:
                v.check_episodes(id, start, time, role_names, labels)
        if binary_outcome:
            v.check_finite(event, role_names["event"], "outcome", labels)
            v.check_binary_outcome(event, role_names["event"], labels)
        event = v.check_events(event, competing_risks, role_names["event"], labels)
        if weights is not None:
            v.check_weights(weights, role_names["weights"], labels)
        codes, strata_labels = (_code_strata(strata_columns, strata, labels) if strata
                                else (None, None))
        v.check_covariates_finite(X, names, labels)
        v.check_covariates_scale(X, names, labels)
        excluded = {**pre_excluded, **v.redundant_columns(X, names)}
        if excluded:
            listing = ", ".join(f"{name!r} ({reason})" for name, reason in excluded.items())
            warnings.warn(f"{len(excluded)} covariate column(s) excluded from the model: "
                          f"{listing}. They carry no information a Cox model can estimate; "
                          "see Cohort.excluded.", DataWarning, stacklevel=3)
            keep = np.array([name not in excluded for name in names], dtype=bool)
            X = X[:, np.flatnonzero(keep)]
            names = [name for name, kept in zip(names, keep) if kept]
        return cls(time=time, event=event, X=X, names=names, binary=v.binary_columns(X),
                   start=start, strata=codes, strata_labels=strata_labels,
                   strata_columns=strata_columns, id=id, weights=weights,
                   reference_levels=reference_levels, excluded=excluded, source=source,
                   competing_risks=competing_risks)

    @property
    def n(self):
        """Number of rows (subjects or episodes)."""
        return len(self.time)

    @property
    def p(self):
        """Number of covariate columns."""
        return self.X.shape[1]

    @property
    def n_events(self):
        """Number of rows with an event (code > 0)."""
        return int(np.count_nonzero(self.event > 0))

    @property
    def n_dropped(self):
        """Rows dropped for missing values (``missing="drop"``)."""
        return int(self.source.get("n_dropped", 0))

    @property
    def n_strata(self):
        """Number of strata (1 when unstratified)."""
        return 1 if self.strata_labels is None else len(self.strata_labels)

    @property
    def binary_outcome(self):
        """True for a cohort built with ``time=None``: ``event`` is a 0/1 outcome."""
        return self.source.get("time", "") is None

    def check_binary_outcome(self, model):
        """Raise a CohortError unless ``event`` can be the 0/1 response of ``model``: codes 0
        and 1 both present, one row per subject (no strata, entry times or causes)."""
        name = self.source.get("event", "event")
        if self.competing_risks:
            raise CohortError(f"column {name!r} (event) holds causes {self.causes}; {model} "
                              "needs a 0/1 outcome: recode it to 0/1 without competing_risks.")
        v.check_binary_outcome(self.event, name)
        if self.strata is not None or self.start is not None:
            raise CohortError(f"{model} takes one row per subject without strata or entry "
                              "times; build the cohort without strata= and start=.")

    @property
    def competing_risks(self):
        """True when event codes 1..k are causes of competing events."""
        return self._competing_risks

    @property
    def causes(self):
        """Sorted distinct positive event codes, e.g. (1,) or (1, 2)."""
        return tuple(np.unique(self.event[self.event > 0]).tolist())

    def with_weights(self, weights, label: str = "weights"):
        """The same cohort with case weights ``weights`` (n,), e.g. propensity-score weights
        (engine.comparative.propensity_weights); ``label`` names them in ``source``.  Checked
        as a weights column is: finite, non-negative, not all zero."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (self.n,):
            raise CohortError(f"{label}: the cohort has {self.n} rows but {weights.size} "
                              "weights were given. Pass one weight per row, in the cohort's "
                              "row order.")
        v.check_weights(weights, label, np.arange(1, self.n + 1))      # rows numbered from 1
        out = copy.copy(self)
        out.weights = _frozen(weights, np.float64)
        out.source = {**self.source, "weights": label}
        return out

    def design_matrix(self, newdata):
        """The covariate columns of ``newdata`` built as this cohort's were: CSC (m, p) in
        ``names`` order, with the formula's fitted knots, levels and scalings.  Needs a cohort
        built from a formula; raises a CohortError naming the term for unknown columns or
        levels, missing values, or spline values outside the fitted range."""
        if self.formula is None:
            raise CohortError("this cohort was not built from a formula, so it holds no recipe "
                              "for new data's columns. Build it with Cohort.from_frame(df, ..., "
                              "formula='age + sex + ...'), or pass the new rows' X yourself.")
        return self.formula.design_matrix(newdata, self.names)

    def encode(self, df):
        """New rows (``newdata``) as the cohort encoded its own: the covariate matrix (m, p) in
        ``names`` order (text columns one-hot against the same reference level) and the
        stratum codes (m,) (None when unstratified).

        A missing column, a missing value, a level or stratum the cohort never saw raises a
        CohortError naming the column and the first bad rows.  Columns the cohort excluded
        (constant, duplicate) are not needed.
        """
        if not isinstance(df, pd.DataFrame):
            raise CohortError(f"newdata must be a pandas DataFrame with the covariate columns, "
                              f"got {type(df).__name__}.")
        if self.formula is not None:                 # the formula's own recipe: knots, levels
            X = self.design_matrix(df)
            return X, (None if self.strata is None else self._strata_codes(df))
        covariates = self.source.get("covariates")
        if covariates is None:                       # from_arrays: the columns are the names
            covariates = list(self.names)
        wanted = [c for c in covariates if str(c) in self.reference_levels
                  or str(c) in self.names]
        needed = wanted + [c for c in self.strata_columns if c not in wanted]
        missing = [c for c in needed if c not in df.columns]
        if missing:
            raise CohortError(f"newdata lacks the column(s) {missing} that the fit used; add "
                              f"them (needed: {needed}).")
        labels = df.index.to_numpy()
        where = {name: j for j, name in enumerate(self.names)}
        rows, cols, vals = [], [], []
        m = len(df)
        for column in wanted:
            series = df[column]
            v.check_no_missing(series, column, "covariate", labels)
            if str(column) in self.reference_levels:
                text = np.array([_level_text([value])[0] if isinstance(value, (int, float,
                                 np.number)) else str(value) for value in series], dtype=object)
                prefix = f"{column}["
                known = {self.reference_levels[str(column)]} | {
                    name[len(prefix):-1] for name in [*self.names, *self.excluded]
                    if name.startswith(prefix) and name.endswith("]")}
                v.fail_rows(~np.isin(text, list(known)), text, column, "covariate",
                            "a level the fitted cohort does not have",
                            f"Use one of its levels {sorted(known)}.", labels)
                for i, level in enumerate(text):
                    j = where.get(f"{column}[{level}]")
                    if j is not None:
                        rows.append(i), cols.append(j), vals.append(1.0)
            else:
                values = _float_column(series, column, "covariate", labels)
                v.check_finite(values, column, "covariate", labels)
                j = where[str(column)]
                rows.extend(range(m)), cols.extend([j] * m), vals.extend(values)
        X = sp.csc_matrix((vals, (rows, cols)), shape=(m, self.p))
        X.eliminate_zeros()
        return X, (None if self.strata is None else self._strata_codes(df))

    def _strata_codes(self, df) -> np.ndarray:
        """The stratum codes (m,) of new rows, by this cohort's strata labels."""
        labels = df.index.to_numpy()
        parts = []
        for column in self.strata_columns:
            v.check_no_missing(df[column], column, "strata", labels)
            parts.append(np.array([_level_text([value])[0] if isinstance(
                value, (int, float, np.number)) else str(value) for value in df[column]],
                dtype=object))
        if len(parts) == 1:
            label = parts[0]
        else:
            label = np.array([", ".join(f"{c}={x}" for c, x in zip(self.strata_columns, row))
                              for row in zip(*parts)], dtype=object)
        code = {text: k for k, text in enumerate(self.strata_labels)}
        v.fail_rows(~np.isin(label, list(code)), label, ", ".join(self.strata_columns),
                    "strata", "a stratum the fitted cohort does not have",
                    f"Use one of its strata {self.strata_labels}.", labels)
        return np.array([code[text] for text in label], dtype=np.int64)

    def to_frame(self):
        """The cohort as a DataFrame: time, start, event, strata (label), id, weights, then the
        covariates densified. For small data (the app, tests)."""
        roles = {"time": self.time, "start": self.start, "event": self.event,
                 "strata": (None if self.strata is None
                            else np.asarray(self.strata_labels, dtype=object)[self.strata]),
                 "id": self.id, "weights": self.weights}
        frame = pd.DataFrame({role: values for role, values in roles.items()
                              if values is not None})
        covariates = pd.DataFrame(self.X.toarray(), columns=self.names)
        return pd.concat([frame, covariates], axis=1)

    def __repr__(self):
        kind = ", counting process" if self.start is not None else ""
        kind += f", competing risks {self.causes}" if self.competing_risks else ""
        return (f"Cohort(n={self.n:,}, p={self.p:,}, events={self.n_events:,}, "
                f"strata={self.n_strata}{kind})")
