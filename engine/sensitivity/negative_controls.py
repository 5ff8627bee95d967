"""Negative-control outcomes: the treatment's estimate on outcomes it is believed not to cause,
from the same cohort and analysis; their spread calibrates the estimates of interest
(engine.sensitivity.calibration; Schuemie et al. 2014, 2018).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..data.cohort import Cohort
from ..core.errors import CohortError
from ..regression.fit import fit
from .calibration import calibrate_ci, calibrate_p, error_model, fit_null


def negative_control_estimates(cohort, outcomes: dict, treatment: str,
                               fit_options: dict | None = None, cancel=None) -> pd.DataFrame:
    """Fit the treatment's log HR for every negative-control outcome.

    Parameters
    ----------
    cohort : engine.Cohort, the analysis of interest (its covariates, strata, entry times,
        weights are kept; only the outcome changes)
    outcomes : dict name -> (time, event): one follow-up end and 0/1 event per cohort row
    treatment : the covariate whose estimate is calibrated
    fit_options : engine.fit keyword arguments (ties, penalty, unpenalized, ...)
    cancel : a threading.Event; once set, the running fit stops with engine.Cancelled

    Returns
    -------
    DataFrame: outcome, log_rr, se, n, events, error (why an outcome could not be fitted)
    """
    if treatment not in cohort.names:
        raise ValueError(f"treatment {treatment!r} is not a covariate of the cohort; "
                         f"covariates: {cohort.names[:20]}.")
    options = {"unpenalized": [treatment], **(fit_options or {})}
    rows = []
    for name, (time, event) in outcomes.items():
        try:
            control = Cohort.from_arrays(time, event, cohort.X, names=cohort.names,
                                         strata=cohort.strata, start=cohort.start,
                                         id=cohort.id, weights=cohort.weights)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fit(control, cancel=cancel, **options)
                se = float(res.se[treatment])
            rows.append({"outcome": name, "log_rr": float(res.coef[treatment]), "se": se,
                         "n": res.n, "events": res.n_events, "error": ""})
        except (CohortError, ValueError) as exc:
            rows.append({"outcome": name, "log_rr": np.nan, "se": np.nan, "n": 0, "events": 0,
                         "error": f"{type(exc).__name__}: {exc}"})
    return pd.DataFrame(rows, columns=["outcome", "log_rr", "se", "n", "events", "error"])


def calibrated(table: pd.DataFrame, controls: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Calibrated p-values and confidence intervals (HR scale) for the rows of a sensitivity
    table, from negative-control estimates (columns log_rr, se): columns calibrated_p,
    calibrated_hr, calibrated_lower, calibrated_upper, aligned with ``table``.  The null is
    assumed the same at every true effect (EmpiricalCalibration's convertNullToErrorModel)."""
    null = fit_null(controls["log_rr"], controls["se"])
    ci = calibrate_ci(table["estimate"], table["se"], error_model(null), level)
    return pd.DataFrame({"calibrated_p": calibrate_p(null, table["estimate"], table["se"]),
                         "calibrated_hr": np.exp(ci["log_rr"].to_numpy()),
                         "calibrated_lower": np.exp(ci["log_lower"].to_numpy()),
                         "calibrated_upper": np.exp(ci["log_upper"].to_numpy())},
                        index=table.index)
