"""The grid of analysis variants: every combination of the choices along the axes a user varies.

An axis is a dict ``label -> choice`` (or a list, labelled by position or by the choice's own
text).  The axes epidemiologists vary (Simonsohn et al. 2020's specification curve; Yang et al.
2024 on stratification designs):

- ``subgroup``: row masks (bool, one per cohort row), None for all rows;
- ``covariates``: adjustment sets (lists of covariate names), None for all covariates;
- ``penalty``: None, engine.L1(lam) or engine.L2(lam);
- ``strata``: stratification designs, codes one per row (None: unstratified);
- ``cut_points``: dicts covariate -> cut times of a time-varying effect (None: constant);
- ``ties``: "breslow" | "efron";
- ``follow_up``: administrative censoring at t (None: the whole follow-up).

An axis left out takes the base analysis's choice.  ``Axes.variants`` lists the grid as dicts
axis -> label, the spec columns of the result frame.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from ..regression.options import TIES
from ..regression.priors import L1, L2

AXES = ("subgroup", "strata", "cut_points", "ties", "follow_up", "covariates", "penalty")
BASE = "base"


@dataclass
class Axes:
    """The checked choices of every axis, label -> value, in the order given."""

    choices: dict

    def variants(self) -> list[dict]:
        """One dict axis -> label per variant, axes in ``AXES`` order (layout axes first)."""
        labels = [list(self.choices[a]) for a in AXES]
        return [dict(zip(AXES, combo)) for combo in itertools.product(*labels)]

    def value(self, axis: str, label):
        return self.choices[axis][label]


def check_axes(cohort, base: dict, vary: dict, of_interest) -> Axes:
    """Validate ``vary`` against the cohort; every axis becomes label -> value."""
    unknown = sorted(set(vary) - set(AXES))
    if unknown:
        raise ValueError(f"vary has unknown axes {unknown}; the axes are {list(AXES)}.")
    default = {"subgroup": None, "strata": _own_strata(cohort),
               "cut_points": base.get("cut_points"), "ties": base.get("ties", "breslow"),
               "follow_up": None, "covariates": base.get("covariates"),
               "penalty": base.get("penalty")}
    choices = {}
    for axis in AXES:
        given = vary.get(axis)
        labelled = {BASE: default[axis]} if given is None else _labelled(axis, given)
        if not labelled:
            raise ValueError(f"vary[{axis!r}] is empty; give at least one choice or leave the "
                             "axis out.")
        choices[axis] = {label: _check_choice(cohort, axis, label, value, of_interest)
                         for label, value in labelled.items()}
    return Axes(choices)


def describe(value) -> str:
    """A short label for a choice given in a list."""
    if value is None:
        return "none"
    if isinstance(value, L1 | L2):
        return f"{type(value).__name__}({value.lam:g})"
    if isinstance(value, dict):
        return "; ".join(f"{k}@{','.join(f'{c:g}' for c in np.ravel(v))}"
                         for k, v in value.items())
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "+".join(value)
    if isinstance(value, str | int | float | np.floating | np.integer):
        return f"{value:g}" if isinstance(value, float | np.floating) else str(value)
    return None


def _labelled(axis, given) -> dict:
    if isinstance(given, dict) and axis != "cut_points":
        return dict(given)
    if isinstance(given, dict):     # one cut-point design given bare
        given = [given]
    if isinstance(given, str) or not isinstance(given, list | tuple):
        raise ValueError(f"vary[{axis!r}] must be a list of choices or a dict label -> choice, "
                         f"got {type(given).__name__}.")
    out = {}
    for i, value in enumerate(given):
        label = describe(value) or f"{axis}{i + 1}"
        out[label if label not in out else f"{label} ({i + 1})"] = value
    return out


def _check_choice(cohort, axis, label, value, of_interest):
    where = f"vary[{axis!r}][{label!r}]"
    if axis == "subgroup":
        if value is None:
            return None
        mask = np.asarray(value)
        if mask.shape != (cohort.n,) or mask.dtype != bool:
            raise ValueError(f"{where} must be a boolean mask with one value per cohort row "
                             f"({cohort.n}), got dtype {mask.dtype} and shape {mask.shape}.")
        return mask
    if axis == "strata":
        if value is None:
            return None
        codes = pd.Series(np.asarray(value))
        if codes.shape != (cohort.n,):
            raise ValueError(f"{where} must hold one stratum per cohort row ({cohort.n}), got "
                             f"shape {codes.shape}.")
        if codes.isna().any():
            rows = (np.flatnonzero(codes.isna().to_numpy())[:5] + 1).tolist()
            raise CohortError(f"{where} is missing at rows {rows} (1-based). Give every row a "
                              "stratum, or drop those rows with a subgroup mask first.")
        return codes.to_numpy()
    if axis == "cut_points":
        if value is not None and not (isinstance(value, dict) and value):
            raise ValueError(f"{where} must be None or a dict like {{'treat': [10, 30]}}.")
        return value
    if axis == "ties":
        if value not in TIES:
            raise ValueError(f"{where} must be one of {TIES}, got {value!r}.")
        return value
    if axis == "follow_up":
        if value is None:
            return None
        t = float(value)
        if not t > 0 or not np.isfinite(t):
            raise ValueError(f"{where} must be a positive finite time (or None), got {value!r}.")
        return t
    if axis == "covariates":
        if value is None:
            return list(cohort.names)
        names = [value] if isinstance(value, str) else list(value)
        missing = [n for n in names if n not in cohort.names]
        if missing:
            raise ValueError(f"{where} names {missing}, which are not covariates of the cohort; "
                             f"covariates: {cohort.names[:20]}.")
        absent = [n for n in of_interest if n not in names]
        if absent:
            raise ValueError(f"{where} leaves out {absent}, a coefficient of interest. Every "
                             "adjustment set must contain of_interest.")
        return [n for n in cohort.names if n in set(names)]
    if value is not None and not isinstance(value, L1 | L2):
        raise ValueError(f"{where} must be None, engine.L1(lam) or engine.L2(lam), got "
                         f"{value!r}.")
    return value


def _own_strata(cohort):
    return None if cohort.strata is None else np.asarray(cohort.strata)
