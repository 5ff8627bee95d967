"""Group rows of a cohort by a strata column, a covariate or given labels (curves and tests).

A group is labelled as R labels survfit curves and survdiff rows, "<column>=<value>", and groups
are ordered by value (numbers numerically, text as the cohort sorted its levels), so that a test
for trend has a natural order and numeric scores.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import CohortError

MAX_GROUPS = 50


@dataclass(frozen=True)
class Groups:
    """codes : ndarray (n,) of 0..k-1; labels : list of k names; scores : ndarray (k,), the
    numeric value of each group where the column is numeric, else 1..k."""

    codes: np.ndarray
    labels: list
    scores: np.ndarray

    @property
    def k(self) -> int:
        return len(self.labels)


def group_rows(cohort, by) -> Groups:
    """The groups of ``by``: None (one group "all"), the name of a single strata column, of a
    covariate (a one-hot encoded text column by its own name), or an array of labels (n,)."""
    if by is None:
        return Groups(np.zeros(cohort.n, dtype=np.int64), ["all"], np.ones(1))
    if not isinstance(by, str):
        array = np.asarray(by)
        if array.shape != (cohort.n,):
            raise CohortError(f"group labels have shape {array.shape}; pass a column name or "
                              f"one label per row ({cohort.n} rows).")
        if array.dtype.kind in "biuf":
            # numbers factorized as numbers: as Python objects 10^6 labels took 80 ms
            codes, levels = pd.factorize(array, sort=True)
            if codes.min() < 0:
                raise CohortError("the group labels hold missing values; give every row a "
                                  "group.")
            return _checked(codes, [str(level) for level in levels.tolist()],
                            levels.astype(float), "the labels")
        values = pd.Series(array.astype(object))
        if values.isna().any():
            raise CohortError("the group labels hold missing values; give every row a group.")
        codes, levels = pd.factorize(values, sort=True)
        numeric = pd.to_numeric(pd.Series(levels), errors="coerce")
        scores = (numeric.to_numpy(float) if numeric.notna().all()
                  else np.arange(1.0, len(levels) + 1))
        return _checked(codes, [str(level) for level in levels], scores, "the labels")
    if by in cohort.strata_columns:
        if len(cohort.strata_columns) > 1:
            raise CohortError(f"{by!r} is one of several strata columns "
                              f"{list(cohort.strata_columns)}; pass the group labels as an array.")
        labels = list(cohort.strata_labels)
        numeric = pd.to_numeric(pd.Series(labels), errors="coerce")
        scores = (numeric.to_numpy(float) if numeric.notna().all()
                  else np.arange(1.0, len(labels) + 1))
        return _checked(np.asarray(cohort.strata), [f"{by}={t}" for t in labels], scores, by)
    if by in cohort.names:
        values = cohort.X[:, cohort.names.index(by)].toarray().ravel()
        levels, codes = np.unique(values, return_inverse=True)
        return _checked(codes, [f"{by}={v:g}" for v in levels], levels, by)
    if by in cohort.reference_levels:
        columns = [(j, name[len(by) + 1:-1]) for j, name in enumerate(cohort.names)
                   if name.startswith(f"{by}[") and name.endswith("]")]
        codes = np.zeros(cohort.n, dtype=np.int64)
        for code, (j, _) in enumerate(columns, start=1):
            codes[cohort.X[:, j].toarray().ravel() != 0] = code
        labels = [cohort.reference_levels[by]] + [level for _, level in columns]
        return _checked(codes, [f"{by}={level}" for level in labels],
                        np.arange(1.0, len(labels) + 1), by)
    raise CohortError(f"{by!r} is neither a strata column nor a covariate of this cohort "
                      f"(covariates: {cohort.names[:20]}). Name one of them, or pass one label "
                      "per row.")


def _checked(codes, labels, scores, name):
    if len(labels) > MAX_GROUPS:
        raise CohortError(f"{name!r} has {len(labels)} distinct values, more than {MAX_GROUPS} "
                          "groups. Group it first (e.g. pd.qcut) and pass the labels.")
    return Groups(np.asarray(codes, dtype=np.int64), labels, np.asarray(scores, dtype=float))
