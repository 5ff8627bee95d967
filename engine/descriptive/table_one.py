"""Table 1: baseline characteristics by group, with missing counts and standardised differences.

Continuous columns: mean (SD, ddof 1) and median [Q1, Q3] (linear quantiles) of the non-missing
values; categorical columns: n (%) of each level among the non-missing rows.  Standardised mean
differences for each pair of groups (Austin 2009; Yang and Dalton 2012, "A unified approach to
measuring the effect size between two groups using SAS", SGF 335-2012):

    continuous  d = |m_a - m_b| / sqrt((s_a^2 + s_b^2) / 2)
    categorical d = sqrt(T' S^-1 T),  T = p_a - p_b over the levels but the first,
                    S = (S_a + S_b) / 2,  S_g = diag(p_g) - p_g p_g'

as the Python package tableone computes them (with include_null=False).

With case weights (inverse-probability weights: the table after weighting, as R tableone's
svyCreateTableOne) every number is weighted: n is the sum of the weights, a level's count its
weights' sum and its percent their share, the mean sum w x / sum w, the variance survey's svyvar,
sum w (x - mean)^2 / sum w * m / (m - 1) over the m rows with a value (ddof 1 without weights),
the quartiles SAS's weighted ones (statsmodels' DescrStatsW.quantile), and the SMDs those
moments'.  Missing counts stay rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from ..core.errors import CohortError

MAX_CATEGORICAL_NUMBER_LEVELS = 5     # whole-number columns with <= 5 values are categorical


@dataclass
class TableOne:
    """What ``engine.table_one`` returns.

    table : DataFrame, the printable Table 1: index (variable, level), columns "Missing",
        "Overall", one per group, and "SMD <a> vs <b>" per pair of groups (text cells)
    summary : DataFrame, the numbers behind it, one row per (variable, level, group): n,
        missing, mean, sd, median, q1, q3 (continuous), count, percent (categorical)
    smd : DataFrame, variable -> SMD per pair of groups
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    smd: pd.DataFrame


def table_one(df: pd.DataFrame, by: str | None = None, columns=None, categorical=None,
              nonnormal=(), decimals: int = 1, weights: str | None = None) -> TableOne:
    """Baseline table of ``columns`` of ``df``, overall and by the groups of ``by``.

    Parameters
    ----------
    df : pandas.DataFrame, one row per subject
    by : group column (e.g. the treatment); missing group values are refused
    columns : columns to describe (default: all but ``by``)
    categorical : columns to show as n (%) (default: text, boolean and categorical columns,
        and whole-number columns with at most 5 distinct values)
    nonnormal : continuous columns shown as median [Q1, Q3] instead of mean (SD)
    decimals : decimals of the printed numbers
    weights : a column of case weights (>= 0, e.g. engine.propensity_weights'): the weighted
        table (see the module)
    """
    if not isinstance(df, pd.DataFrame):
        raise CohortError(f"table_one needs a pandas DataFrame, got {type(df).__name__}.")
    columns = [c for c in df.columns if c != by] if columns is None else list(columns)
    missing_columns = [c for c in [*columns, *([by] if by is not None else [])]
                       if c not in df.columns]
    if missing_columns:
        raise CohortError(f"columns {missing_columns} are not in the data; it has "
                          f"{[str(c) for c in df.columns][:30]}.")
    if by in columns:
        raise CohortError(f"{by!r} is the group column; leave it out of columns.")
    w = _weights(df, weights)
    columns = [c for c in columns if c != weights]
    if not columns or len(df) == 0:
        raise CohortError(f"nothing to describe: {len(df)} rows and columns {columns}. Pass "
                          "a DataFrame with rows and the columns to summarise.")
    categorical = ([c for c in columns if _looks_categorical(df[c])] if categorical is None
                   else list(categorical))
    # each group's rows once, as positions: a column's groups then cost O(n) together, and
    # each pair's SMD reads the two groups' moments (10^6 rows by a 40-level column: 11 s of
    # masked selections, one per group and pair, before)
    groups = {label: np.flatnonzero(mask) for label, mask in _groups(df, by).items()}
    pairs = list(combinations([g for g in groups if g != "Overall"], 2))
    rows, smd_rows = [], {}
    for column in columns:
        kind = "categorical" if column in categorical else "continuous"
        if kind == "continuous" and not ptypes.is_numeric_dtype(df[column]):
            raise CohortError(f"column {column!r} holds text; list it in categorical= or "
                              "convert it to numbers (pd.to_numeric).")
        levels = _levels(df[column]) if kind == "categorical" else None
        moments = {}
        for label, rows_of in groups.items():
            part, part_w = df[column].iloc[rows_of], None if w is None else w[rows_of]
            rows += _describe(part, part_w, column, label, kind, levels)
            if label != "Overall":
                moments[label] = _moments(part, part_w, kind, levels)
        smd_rows[column] = {f"{a} vs {b}": _smd(moments[a], moments[b], kind)
                            for a, b in pairs}
    summary = pd.DataFrame(rows).reindex(columns=[
        "variable", "level", "group", "n", "missing", "mean", "sd", "median", "q1", "q3",
        "count", "percent"])
    smd = pd.DataFrame.from_dict(smd_rows, orient="index").astype(float)
    smd.index.name = "variable"
    table = _format(summary, smd, list(groups), nonnormal, decimals, w is not None)
    return TableOne(table=table, summary=summary, smd=smd)


def _weights(df, weights):
    """The case weights as floats (None without), or a CohortError naming the bad rows."""
    if weights is None:
        return None
    if weights not in df.columns:
        raise CohortError(f"weights column {weights!r} is not in the data.")
    w = pd.to_numeric(df[weights], errors="coerce").to_numpy(float)
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise CohortError(f"column {weights!r} (weights) has {bad.size} row(s) that are not "
                          f"numbers >= 0: rows {df.index[bad[:5]].tolist()}. Fix or drop them.")
    return w


def _looks_categorical(series):
    if not ptypes.is_numeric_dtype(series) or ptypes.is_bool_dtype(series):
        return True
    values = series.dropna().to_numpy(float)
    return bool(values.size and np.all(values == np.round(values))
                and np.unique(values).size <= MAX_CATEGORICAL_NUMBER_LEVELS)


def _groups(df, by):
    """Group label -> boolean row mask; "Overall" first."""
    out = {"Overall": np.ones(len(df), dtype=bool)}
    if by is None:
        return out
    values = df[by]
    if values.isna().any():
        bad = np.flatnonzero(values.isna().to_numpy())[:5]
        raise CohortError(f"column {by!r} (group) has missing values in rows "
                          f"{df.index[bad].tolist()}. Remove or fill them first.")
    for level in _levels(values):
        out[_text(level)] = (values == level).to_numpy()
    return out


def _text(level):
    """A level as text; whole-number floats without '.0' (ph.ecog=1, not 1.0)."""
    if isinstance(level, float) and level == round(level):
        return str(int(level))
    return str(level)


def _levels(series):
    """Distinct non-missing values in category order, else sorted."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return [c for c in series.cat.categories if (series == c).any()]
    return sorted(series.dropna().unique().tolist(), key=lambda v: (str(type(v)), v))


def _describe(values, w, column, group, kind, levels):
    """A group's rows of the summary for one column (weighted by ``w`` unless None)."""
    present = values.notna().to_numpy()
    weighted = w is not None
    w = np.ones(len(values)) if w is None else w
    base = {"variable": column, "group": group, "n": w.sum() if weighted else len(values),
            "missing": int((~present).sum())}
    wp = w[present]
    if kind == "continuous":
        x = values.to_numpy(float)[present]
        _, mean, var = _weighted_moments(x, wp)
        quartiles = (_weighted_quantiles(x, wp) if weighted else
                     np.quantile(x, [0.25, 0.5, 0.75]) if x.size else (np.nan,) * 3)
        return [{**base, "level": "", "mean": mean, "sd": np.sqrt(var),
                 "median": quartiles[1], "q1": quartiles[0], "q3": quartiles[2]}]
    kept = values[present]
    total = wp.sum()
    out = []
    for level in levels:
        count = wp[(kept == level).to_numpy()].sum()
        out.append({**base, "level": _text(level), "count": count if weighted else int(count),
                    "percent": 100.0 * count / total if total > 0 else np.nan})
    return out


def _weighted_moments(x, w):
    """(rows, mean, variance): sum w x / sum w and sum w (x - mean)^2 / sum w * m / (m - 1)
    over the m values (the sample variance without weights); NaN where undefined."""
    total = w.sum()
    if x.size == 0 or total <= 0:
        return x.size, np.nan, np.nan
    mean = float(w @ x / total)
    if x.size < 2:
        return x.size, mean, np.nan
    return x.size, mean, float(w @ (x - mean) ** 2 / total * x.size / (x.size - 1))


def _weighted_quantiles(x, w, probs=(0.25, 0.5, 0.75)):
    """SAS's weighted quantiles (statsmodels' DescrStatsW.quantile): over the distinct values
    y_1 < y_2 < ... with summed weights, s_j the first j's sum and W the whole, the quantile
    at p is y_{j+1} where s_j < pW < s_{j+1}, the midpoint of y_j and y_{j+1} where pW = s_j
    (to rounding), and y_1 below s_1."""
    if x.size == 0 or w.sum() <= 0:
        return (np.nan,) * len(probs)
    y, codes = np.unique(x, return_inverse=True)
    cumulative = np.cumsum(np.bincount(codes, w, y.size))
    out = []
    for p in probs:
        target = p * cumulative[-1]
        j = int(np.searchsorted(cumulative, target * (1 - 1e-12)))   # first s_j >= pW
        if j < y.size - 1 and np.isclose(cumulative[j], target, rtol=1e-12, atol=0):
            out.append((y[j] + y[j + 1]) / 2)
        else:
            out.append(y[min(j, y.size - 1)])
    return tuple(out)


def _moments(values, w, kind, levels):
    """What a group's SMDs read: (size, mean, variance) of its non-missing values
    (continuous), or (size, the share of each level but the first) (categorical)."""
    present = values.notna().to_numpy()
    w = np.ones(len(values)) if w is None else w
    wp = w[present]
    if kind == "continuous":
        return _weighted_moments(values.to_numpy(float)[present], wp)
    kept = values[present]
    total = wp.sum()
    if kept.empty or total <= 0:
        return 0, None
    return kept.size, np.array([wp[(kept == level).to_numpy()].sum() / total
                                for level in levels])[1:]


def _smd(a, b, kind):
    """The standardised difference of two groups from their _moments."""
    if kind == "continuous":
        if min(a[0], b[0]) < 2:
            return np.nan                  # no SD from fewer than two values
        pooled = np.sqrt((a[2] + b[2]) / 2)
        diff = abs(a[1] - b[1])
        return diff / pooled if pooled > 0 else (0.0 if diff == 0 else np.inf)
    if a[0] == 0 or b[0] == 0:
        return np.nan
    p_a, p_b = a[1], b[1]
    t = p_a - p_b
    s = (np.diag(p_a) - np.outer(p_a, p_a) + np.diag(p_b) - np.outer(p_b, p_b)) / 2
    if not t.any():
        return 0.0
    return float(np.sqrt(t @ np.linalg.pinv(s) @ t))


def _format(summary, smd, groups, nonnormal, decimals, weighted=False):
    """The printable table: one row per continuous variable / categorical level (weighted
    sizes and counts with ``decimals``)."""
    f = f"{{:.{decimals}f}}"
    size = f.format if weighted else (lambda value: str(int(value)))
    cells = {}
    for (variable, level), part in summary.groupby(["variable", "level"], sort=False):
        by_group = part.set_index("group")
        row = {"Missing": str(int(by_group.loc["Overall", "missing"]))}
        for group in groups:
            r = by_group.loc[group]
            if level == "":
                row[group] = (f"{f.format(r['median'])} [{f.format(r['q1'])}, "
                              f"{f.format(r['q3'])}]" if variable in nonnormal
                              else f"{f.format(r['mean'])} ({f.format(r['sd'])})")
            else:
                row[group] = f"{size(r['count'])} ({f.format(r['percent'])})"
        for pair in smd.columns:
            row[pair] = f"{smd.loc[variable, pair]:.3f}"
        cells[(variable, level)] = row
    n_row = {"Missing": ""}
    n_row.update({g: size(summary.loc[summary["group"] == g, "n"].iloc[0]) for g in groups})
    n_row.update({pair: "" for pair in smd.columns})
    table = pd.DataFrame.from_dict({("n", ""): n_row, **cells}, orient="index")
    table.index.names = ["variable", "level"]
    first_levels = table.index.get_level_values("level")
    repeated = table.index.get_level_values("variable").duplicated() & (first_levels != "")
    for column in ["Missing", *smd.columns]:      # once per variable, on its first row
        table.loc[repeated, column] = ""
    return table
