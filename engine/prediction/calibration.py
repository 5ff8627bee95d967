"""A calibration table of a Cox fit at one time: rows grouped by their predicted risk
1 - S_i(t) into equal-sized groups (deciles by default), each group's mean predicted risk beside
its observed risk, one minus the group's Kaplan-Meier estimate at t (the table behind a
calibration plot; Harrell, Regression Modeling Strategies, sec. 20.1).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .ipcw import kaplan_meier_steps
from ..regression.predict import cohort_survival, cox_baseline


def calibration_table(res, time: float, cohort=None, groups: int = 10) -> pd.DataFrame:
    """group, n, events, predicted (mean 1 - S_i(t)), observed (1 - Kaplan-Meier at t) of the
    rows of ``cohort`` (default: the fitted one; a held-out cohort must have the fit's
    covariates and strata).  A group whose follow-up ends before t has observed NaN."""
    cox_baseline(res)
    cohort = res.problem.cohort if cohort is None else cohort
    if cohort.start is not None:
        raise ValueError("a calibration table compares with a Kaplan-Meier estimate from time "
                         "0: build the cohort without entry times (start=).")
    if not (isinstance(time, (int, float, np.integer, np.floating)) and np.isfinite(time)
            and time > 0):
        raise ValueError(f"time must be one finite follow-up time > 0, got {time!r}.")
    if not (isinstance(groups, (int, np.integer)) and 2 <= groups <= cohort.n):
        raise ValueError(f"groups must be an integer from 2 to the number of rows, got "
                         f"{groups!r}.")
    predicted = 1.0 - cohort_survival(res, cohort, [time])[:, 0]
    order = np.argsort(predicted, kind="mergesort")
    group = np.empty(cohort.n, np.int64)
    group[order] = np.arange(cohort.n) * groups // cohort.n
    stop, event = np.asarray(cohort.time, float), np.asarray(cohort.event) > 0
    rows = []
    for g in range(groups):
        inside = group == g
        km = kaplan_meier_steps(stop[inside], event[inside])
        observed = (1.0 - km(time) if time <= stop[inside].max() or km.values[-1] == 0
                    else np.nan)
        rows.append({"group": g + 1, "n": int(inside.sum()), "events": int(event[inside].sum()),
                     "predicted": predicted[inside].mean(), "observed": float(observed)})
    return pd.DataFrame(rows)
