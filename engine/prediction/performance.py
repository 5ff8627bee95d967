"""How well a Cox fit predicts, on the fitted cohort or on held-out data, in one call: Uno's C
up to tau (uno.py), the cumulative/dynamic AUC (time_auc.py), the Brier score (brier.py) at the
chosen times and its integral.  The censoring distribution of the IPCW weights is estimated
from the fitted cohort (scikit-survival's survival_train), the risk score is the linear
predictor and the predicted survival the fit's (predict.py).  Harrell's C with its standard
error is engine.concordance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .brier import brier_score
from ..regression.predict import cohort_survival, cox_baseline
from .time_auc import time_dependent_auc
from .uno import uno_concordance


@dataclass
class PredictivePerformance:
    """What ``engine.predictive_performance`` returns.

    summary : uno_c (up to tau), tau, mean_auc, integrated_brier
    by_time : time, auc, brier
    """

    summary: pd.Series
    by_time: pd.DataFrame


def predictive_performance(res, times, cohort=None, tau=None) -> PredictivePerformance:
    """Uno's C, AUC(t), Brier(t) and the integrated Brier score of the Cox fit ``res`` on
    ``cohort`` (default: the fitted one; held-out data must have the fit's covariates and
    strata) at increasing ``times`` (at least two); ``tau`` defaults to the last time."""
    cox_baseline(res)
    fitted = res.problem.cohort
    cohort = fitted if cohort is None else cohort
    if fitted.start is not None or cohort.start is not None:
        raise ValueError("the IPCW metrics need one row per subject from time 0: build the "
                         "cohorts without entry times (start=).")
    times = np.atleast_1d(np.asarray(times, float))
    if times.size < 2 or np.any(np.diff(times) <= 0):
        raise ValueError("times must be at least two increasing times.")
    tau = float(times[-1]) if tau is None else float(tau)
    train = (np.asarray(fitted.time, float), np.asarray(fitted.event) > 0)
    time, event = np.asarray(cohort.time, float), np.asarray(cohort.event) > 0
    lp = np.asarray(cohort.X @ np.nan_to_num(res.coef.to_numpy(float))).ravel()
    survival = cohort_survival(res, cohort, times)
    auc, mean_auc = time_dependent_auc(time, event, lp, times, train=train)
    brier = brier_score(time, event, survival, times, train=train)
    return PredictivePerformance(
        summary=pd.Series({"uno_c": uno_concordance(time, event, lp, train=train, tau=tau),
                           "tau": tau, "mean_auc": mean_auc,
                           "integrated_brier": float(np.trapezoid(brier, times)
                                                     / (times[-1] - times[0]))}),
        by_time=pd.DataFrame({"time": times, "auc": auc, "brier": brier}))
