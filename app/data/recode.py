"""Recode and filter steps on the loaded table: keep rows in a numeric range or with chosen
values, cut a numeric column into groups at cut points (age groups), set the reference level
of a categorical, recode values (R's 1/2 status to 0/1), convert a column to numbers (text that
is not a number becomes missing), weight by a propensity score (engine.propensity_weights of a
0/1 treatment column on chosen covariates: a weight column and its score, on any table).

A step is JSON-able data ({"op": ..., "column": ...}); ``apply_step`` runs it with pandas and
``step_code`` writes the same pandas lines for the exported script, so the script rebuilds the
table the app fitted.  A step that cannot apply raises DataLoadError naming the column and the
fix; the table is never changed in place.
"""

from __future__ import annotations

import math

import pandas as pd

import engine

from .loading import DataLoadError

OPS = {"range": "Keep rows in a range", "values": "Keep rows with chosen values",
       "cut": "Cut into groups", "reference": "Set the reference level",
       "recode": "Recode values", "number": "Convert to number (text becomes missing)",
       "psweight": "Weight by a propensity score (column = 0/1 treatment)"}
# engine.propensity_weights' estimands, as offered
ESTIMANDS = {"ATE: inverse probability of treatment": "ATE", "ATT: the treated": "ATT",
             "ATC: the controls": "ATC", "ATO: overlap weights": "ATO",
             "ATM: matching weights": "ATM"}


def apply_step(df: pd.DataFrame, step: dict) -> pd.DataFrame:
    """The table after ``step`` (a new frame)."""
    op, column = step.get("op"), step.get("column")
    if op not in OPS:
        raise DataLoadError(f"unknown step {op!r}; use one of {sorted(OPS)}")
    if column not in df.columns:
        raise DataLoadError(f"column {column!r} is not in the table")
    s = df[column]
    if op in ("range", "cut") and not pd.api.types.is_numeric_dtype(s):
        raise DataLoadError(f"column {column!r} is not numeric: {OPS[op].lower()} needs "
                            "numbers (recode or keep chosen values instead)")
    out = df.copy()
    if op == "psweight":
        ps = propensity(df, step)
        out[step["name"]] = ps.weights
        out[step["name"] + "_ps"] = ps.ps
        return out
    if op == "range":
        keep = _range_mask(s, step.get("low"), step.get("high"))
        return _kept(out, keep, column)
    if op == "values":
        return _kept(out, s.isin(step["values"]), column)
    if op == "cut":
        cuts = _cuts(step["cuts"], column)
        name = step.get("name") or f"{column}_group"
        out[name] = pd.cut(s, [-math.inf, *cuts, math.inf], right=False, labels=labels(cuts))
        return out
    if op == "reference":
        levels = level_order(s)
        if step["level"] not in levels:
            raise DataLoadError(f"{step['level']!r} is not a value of column {column!r}")
        out[column] = pd.Categorical(s, categories=reference_first(levels, step["level"]))
        return out
    if op == "number":
        out[column] = pd.to_numeric(s, errors="coerce")
        return out
    mapping = {a: b for a, b in step["mapping"]}
    out[column] = s.map(lambda v: mapping.get(v, v))   # values not named stay as they are
    return out


def propensity(df: pd.DataFrame, step: dict):
    """engine.PropensityWeights of a "psweight" step on ``df`` (DataLoadError naming the
    problem: a treatment that is not 0/1, a missing value, no overlap, separation)."""
    try:
        return engine.propensity_weights(df, treatment=step["column"],
                                         covariates=list(step["covariates"]),
                                         estimand=step["estimand"], trim=step.get("trim"),
                                         weights=step.get("weights"))
    except ValueError as exc:          # engine.CohortError is one
        raise DataLoadError(f"propensity score of {step['column']!r}: {exc}") from exc


def balance_note(ps) -> str:
    """Effective sample sizes and the largest standardised difference, before and after."""
    ess, b = ps.ess, ps.balance
    covariates = b[b["type"] != "distance"]
    return (f"effective sample size control {ess.loc['before', 'control']:,.0f} -> "
            f"{ess.loc['after', 'control']:,.1f}, treated {ess.loc['before', 'treated']:,.0f} "
            f"-> {ess.loc['after', 'treated']:,.1f}; largest |difference| over the covariates "
            f"{covariates['diff_before'].abs().max():.3f} -> "
            f"{covariates['diff_after'].abs().max():.3f} (standardised for continuous ones)")


def not_numbers(s: pd.Series) -> int:
    """How many present values of ``s`` are not numbers (they become missing on conversion)."""
    return int((pd.to_numeric(s, errors="coerce").isna() & s.notna()).sum())


def step_code(step: dict) -> list[str]:
    """Python lines (pandas on ``df``) doing what ``apply_step`` does."""
    op, c = step["op"], step["column"]
    col = f"df[{c!r}]"
    if op == "psweight":
        name = step["name"]
        return [f"ps = engine.propensity_weights(df, treatment={c!r}, "
                f"covariates={list(step['covariates'])!r}, estimand={step['estimand']!r}, "
                f"trim={step.get('trim')!r}, weights={step.get('weights')!r})",
                f"df[{name!r}] = ps.weights", f"df[{name + '_ps'!r}] = ps.ps"]
    if op == "range":
        terms = ([f"({col} >= {step['low']!r})"] if step.get("low") is not None else []) + \
                ([f"({col} <= {step['high']!r})"] if step.get("high") is not None else [])
        return [f"df = df[{' & '.join(terms)}].reset_index(drop=True)"]
    if op == "values":
        return [f"df = df[{col}.isin({list(step['values'])!r})].reset_index(drop=True)"]
    if op == "cut":
        cuts = _cuts(step["cuts"], c)
        name = step.get("name") or f"{c}_group"
        return [f"df[{name!r}] = pd.cut({col}, [float('-inf'), {', '.join(map(repr, cuts))}, "
                f"float('inf')], right=False, labels={labels(cuts)!r})"]
    if op == "reference":
        return [f"df[{c!r}] = pd.Categorical({col}, categories={step['categories']!r})"
                f"  # reference level {step['level']!r} first"]
    if op == "number":
        return [f"df[{c!r}] = pd.to_numeric({col}, errors='coerce')  # text becomes missing"]
    mapping = {a: b for a, b in step["mapping"]}
    return [f"df[{c!r}] = {col}.map(lambda v: {mapping!r}.get(v, v))"]


def describe(step: dict) -> str:
    """The step in words, for the list of steps."""
    op, c = step["op"], step["column"]
    if op == "psweight":
        trim = step.get("trim")
        return (f"{step['name']}: {step['estimand']} weights from a propensity score of {c} on "
                f"{', '.join(step['covariates'])}"
                + (f", trimmed outside [{trim:g}, {1 - trim:g}]" if trim else "")
                + (f", times the case weights {step['weights']}" if step.get("weights") else ""))
    if op == "range":
        low = "-inf" if step.get("low") is None else f"{step['low']:g}"
        high = "inf" if step.get("high") is None else f"{step['high']:g}"
        return f"kept rows with {c} in [{low}, {high}]"
    if op == "values":
        return f"kept rows with {c} in {list(step['values'])}"
    if op == "cut":
        return (f"cut {c} at {', '.join(f'{x:g}' for x in step['cuts'])} into "
                f"{step.get('name') or c + '_group'}")
    if op == "reference":
        return f"{c}: reference level {step['level']!r}"
    if op == "number":
        return f"{c} converted to numbers (text became missing)"
    return f"recoded {c}: " + ", ".join(f"{a!r} -> {b!r}" for a, b in step["mapping"])


def reference_step(df: pd.DataFrame, column: str, level) -> dict:
    """The reference step with its category order written out (so the script needs no
    sorting rule)."""
    levels = level_order(df[column])
    return {"op": "reference", "column": column, "level": level,
            "categories": reference_first(levels, level)}


def level_order(s: pd.Series) -> list:
    """Levels as the engine orders them: a categorical's categories, else sorted values."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return list(s.cat.categories)
    values = s.dropna().unique().tolist()
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def reference_first(levels: list, level) -> list:
    return [level, *(v for v in levels if v != level)]


def labels(cuts: list[float]) -> list[str]:
    """Group names of cut points c1 < ... < ck: <c1, [c1,c2), ..., >=ck."""
    inner = [f"[{a:g},{b:g})" for a, b in zip(cuts, cuts[1:])]
    return [f"<{cuts[0]:g}", *inner, f">={cuts[-1]:g}"]


def parse_mapping(text: str) -> list[list]:
    """'1=0, 2=1' -> [[1, 0], [2, 1]] (numbers where they read as numbers)."""
    pairs = []
    for part in [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]:
        if "=" not in part:
            raise DataLoadError(f"{part!r} is not old=new; type e.g. 1=0, 2=1")
        a, b = (_value(x.strip()) for x in part.split("=", 1))
        pairs.append([a, b])
    if not pairs:
        raise DataLoadError("type at least one old=new pair, e.g. 1=0, 2=1")
    return pairs


def _value(text: str):
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _range_mask(s, low, high):
    if low is None and high is None:
        raise DataLoadError("give a lower or an upper bound (or both)")
    keep = pd.Series(True, index=s.index)
    if low is not None:
        keep &= s >= low
    if high is not None:
        keep &= s <= high
    return keep


def _kept(df, keep, column):
    if not keep.any():
        raise DataLoadError(f"no row of {column!r} passes this filter; the table is unchanged")
    return df[keep.to_numpy()].reset_index(drop=True)


def _cuts(cuts, column) -> list[float]:
    values = sorted({float(c) for c in cuts})
    if not values or not all(math.isfinite(v) for v in values):
        raise DataLoadError(f"cut points of {column!r} must be finite numbers, e.g. 40, 60")
    return values
