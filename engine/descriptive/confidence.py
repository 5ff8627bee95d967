"""Pointwise confidence limits of survival curves and state probabilities, as R's survfit_confint
("log", "log-log", "plain"; the upper limit at most 1)."""
from __future__ import annotations

import numpy as np
from scipy import stats


def survfit_limits(s, var_log, conf_type, level):
    """R's survfit_confint: pointwise limits of a curve S (a survival or a state's
    probability) from the variance of log S; NaN where the variance is not finite."""
    z = stats.norm.ppf(1 - (1 - level) / 2)
    se = np.sqrt(var_log)
    with np.errstate(divide="ignore", invalid="ignore"):
        if conf_type == "log":
            xx = np.where(s == 0, np.nan, s)
            lower = np.exp(np.log(xx) - z * se)
            upper = np.minimum(np.exp(np.log(xx) + z * se), 1.0)
        elif conf_type == "log-log":
            xx = np.where((s == 0) | (s == 1), np.nan, s)
            shift = z * se / np.log(xx)
            lower = np.exp(-np.exp(np.log(-np.log(xx)) - shift))
            upper = np.exp(-np.exp(np.log(-np.log(xx)) + shift))
        else:
            lower = np.maximum(s - z * se * s, 0.0)
            upper = np.minimum(s + z * se * s, 1.0)
    at_zero_se = se == 0
    lower = np.where(at_zero_se, s, lower)
    upper = np.where(at_zero_se, s, upper)
    bad = ~np.isfinite(se)
    return np.where(bad, np.nan, lower), np.where(bad, np.nan, upper)
