"""One variant as its own analysis: the cohort and the ``engine.fit`` arguments that reproduce it.

A variant restricts the rows (subgroup), censors at the end of follow-up t (rows entering at or
after t leave; a row still at risk at t is censored there), keeps an adjustment set of columns
and takes a stratification design.  ``variant_cohort`` builds that cohort from the arrays of the
original one, already validated, so no column is dropped or renamed: ``engine.fit`` of it is
the fit the grid computes on its shared layout.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.cohort import Cohort
from ..data.validation import binary_columns


def rows_of(cohort, mask, follow_up) -> np.ndarray:
    """The rows a variant keeps: those in its subgroup that enter before the end of follow-up."""
    keep = np.ones(cohort.n, bool) if mask is None else np.asarray(mask, bool).copy()
    if follow_up is not None and cohort.start is not None:
        keep &= np.asarray(cohort.start) < follow_up
    return keep


def truncated(time, event, follow_up):
    """(time, event) under administrative censoring at ``follow_up``."""
    time, event = np.asarray(time, np.float64), np.asarray(event)
    if follow_up is None:
        return time, event
    return np.minimum(time, follow_up), np.where(time <= follow_up, event, 0)


def recode(codes):
    """Strata codes 0..K-1 and their labels, or (None, None)."""
    if codes is None:
        return None, None
    values, uniques = pd.factorize(np.asarray(codes), sort=True)
    return values.astype(np.int64), [str(u) for u in uniques]


def derived_cohort(cohort, rows=None, cols=None, time=None, event=None, start=None,
                   strata=None, id=None, weights=None, source=None) -> Cohort:
    """A Cohort from ``cohort``'s arrays, rows and columns selected, roles replaced where given;
    ``strata`` is a (codes, labels) pair.  Nothing is validated again.  With every row and
    column kept the covariates are shared, not copied (a layout's cohort at 10^6 x 1,000 spent
    5 s copying them twice)."""
    whole = rows is None and cols is None
    rows = np.arange(cohort.n) if rows is None else rows
    if whole:
        X = cohort.X
    else:
        X = cohort.X[rows] if cols is None else cohort.X[rows][:, cols]
    X = X.tocsc()
    names = cohort.names if cols is None else [cohort.names[j] for j in cols]
    pick = (lambda a: None if a is None else np.asarray(a)[rows])
    codes, labels = strata if strata is not None else (pick(cohort.strata),
                                                       cohort.strata_labels)
    return Cohort(time=pick(cohort.time) if time is None else time,
                  event=pick(cohort.event) if event is None else event,
                  X=X, names=names, binary=cohort.binary if whole else binary_columns(X),
                  start=pick(cohort.start) if start is None else start,
                  strata=codes, strata_labels=labels,
                  strata_columns=cohort.strata_columns if strata is None else ("design",),
                  id=pick(cohort.id) if id is None else id,
                  weights=pick(cohort.weights) if weights is None else weights,
                  reference_levels=cohort.reference_levels, excluded=dict(cohort.excluded),
                  source={**cohort.source, **(source or {})},
                  competing_risks=cohort.competing_risks)


def variant_cohort(cohort, axes, spec: dict) -> Cohort:
    """The cohort of one variant (``spec``: axis -> label of ``axes``) on its own."""
    mask, t = axes.value("subgroup", spec["subgroup"]), axes.value("follow_up", spec["follow_up"])
    keep = np.flatnonzero(rows_of(cohort, mask, t))
    time, event = truncated(np.asarray(cohort.time)[keep], np.asarray(cohort.event)[keep], t)
    names = axes.value("covariates", spec["covariates"])
    cols = [cohort.names.index(n) for n in names]
    design = axes.value("strata", spec["strata"])
    strata = recode(None if design is None else np.asarray(design)[keep])
    return derived_cohort(cohort, rows=keep, cols=cols, time=time, event=event, strata=strata,
                          source={"variant": dict(spec)})


def fit_arguments(axes, spec: dict, base: dict, of_interest) -> dict:
    """The keyword arguments of ``engine.fit`` (less the cohort) for one variant."""
    names = axes.value("covariates", spec["covariates"])
    unpenalized = [u for u in base.get("unpenalized", of_interest) if u in names]
    cut_points = axes.value("cut_points", spec["cut_points"])
    kwargs = {k: v for k, v in base.items()
              if k not in ("covariates", "penalty", "cut_points", "ties", "unpenalized")}
    return {**kwargs, "ties": axes.value("ties", spec["ties"]),
            "penalty": axes.value("penalty", spec["penalty"]), "unpenalized": unpenalized,
            "cut_points": cut_points}
