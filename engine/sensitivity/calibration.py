"""Empirical calibration by negative (and positive) controls (Schuemie et al. 2014, "Interpreting
observational studies: why empirical calibration is needed to correct p-values"; Schuemie et al.
2018, "Empirical confidence interval calibration for population-level effect estimation
studies in observational healthcare data"), as OHDSI's EmpiricalCalibration R package.

Negative controls are outcomes (or exposures) the treatment is believed not to affect: their
estimates scatter around a true log RR of 0 by random error (their standard errors) plus a
systematic error.  The empirical null models that systematic error as a normal N(mean, sd^2):
a control's estimate is then N(mean, sd^2 + se_i^2), and (mean, sd) are fitted by maximum
likelihood (``fit_null``, EmpiricalCalibration's fitNull).  A calibrated p-value compares an
estimate with that null rather than with N(0, se^2) (``calibrate_p``, its calibrateP).

With positive controls of known true effect the systematic error may move with the true log RR:
mean = a + b x, sd = c + d |x| (``fit_systematic_error_model``); with negative controls only, b
= 1 and d = 0 (``error_model``, its convertNullToErrorModel).  The calibrated interval is the
set of true effects x under which the estimate is not extreme: its bounds solve
(a + b x - log RR) / sqrt(sd(x)^2 + se^2) = -/+ z (``calibrate_ci``, its
calibrateConfidenceInterval).  The package fits by R's optim (Nelder-Mead, BFGS); here the
same likelihoods are maximised to a tighter tolerance; the fitted values agree
with its printed ones to about 1e-4, the precision of optim and uniroot at their defaults.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ..core.arguments import check_flag
from ..core.errors import DataWarning

MAX_ABS_LOG_RR = np.log(100.0)   # EmpiricalCalibration leaves out controls beyond 100-fold
_BOUND = 100.0                   # calibrated bounds are searched in [-100, 100] (log scale)
# Below this many usable negative controls the null's spread is barely identified (with 2 its
# maximum-likelihood sd is often exactly 0): fit_null warns.
FEW_CONTROLS = 5


@dataclass(frozen=True)
class EmpiricalNull:
    """The systematic-error distribution N(mean, sd^2) of log RR estimates under the null;
    ``n`` controls fitted it, ``left_out`` were not usable (non-finite, or |log RR| > log 100)."""

    mean: float
    sd: float
    n: int
    left_out: int = 0


@dataclass(frozen=True)
class SystematicErrorModel:
    """Systematic error as a function of the true log RR x: N(mean_intercept + mean_slope x,
    (sd_intercept + sd_slope |x|)^2)."""

    mean_intercept: float
    mean_slope: float
    sd_intercept: float
    sd_slope: float


def null_loglik(mean, sd, log_rr, se) -> float:
    """The log-likelihood of the empirical null at (mean, sd): sum log N(log_rr; mean,
    sd^2 + se^2)."""
    return float(stats.norm.logpdf(log_rr, mean, np.sqrt(sd * sd + se * se)).sum())


def fit_null(log_rr, se) -> EmpiricalNull:
    """Fit the empirical null to negative-control estimates (log RR and its standard error)."""
    log_rr, se, left_out = _usable(log_rr, se, drop_extreme=True)
    if log_rr.size == 0:
        raise ValueError("no usable negative-control estimate (each needs a finite log RR "
                         "within log(100) of 0 and a finite positive standard error).")
    if log_rr.size < 2:
        raise ValueError(f"fit_null needs at least 2 usable negative-control estimates, got "
                         f"{log_rr.size} ({left_out} left out): one estimate cannot tell the "
                         "null's spread from its own standard error. Add negative controls.")
    if log_rr.size < FEW_CONTROLS:
        warnings.warn(f"the empirical null rests on {log_rr.size} negative-control estimates "
                      f"(fewer than {FEW_CONTROLS}): its mean and spread are poorly determined "
                      "and the calibrated p-values and intervals with them. Add negative "
                      "controls.", DataWarning, stacklevel=2)
    start = [float(np.mean(log_rr)), float(max(np.std(log_rr), 0.1))]
    fit = optimize.minimize(lambda th: -null_loglik(th[0], th[1], log_rr, se), start,
                            method="L-BFGS-B", bounds=[(None, None), (0.0, None)],
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10_000})
    return EmpiricalNull(mean=float(fit.x[0]), sd=float(fit.x[1]), n=int(log_rr.size),
                         left_out=int(left_out))


def calibrate_p(null: EmpiricalNull, log_rr, se, two_sided: bool = True,
                upper: bool = True) -> np.ndarray:
    """Calibrated p-values of estimates against the empirical null (NaN where an estimate or
    its standard error is not finite).  One-sided: ``upper`` tests a log RR above the null."""
    check_flag("two_sided", two_sided)
    check_flag("upper", upper)
    log_rr, se = np.asarray(log_rr, np.float64), np.asarray(se, np.float64)
    z = (log_rr - null.mean) / np.sqrt(null.sd ** 2 + se ** 2)
    above, below = stats.norm.sf(z), stats.norm.cdf(z)
    p = 2.0 * np.minimum(above, below) if two_sided else (above if upper else below)
    return np.where(np.isfinite(log_rr) & np.isfinite(se), p, np.nan)


def error_model(null: EmpiricalNull, mean_slope: float = 1.0,
                sd_slope: float = 0.0) -> SystematicErrorModel:
    """The systematic error model of negative controls alone: the null's error at every true
    effect (slopes 1 and 0 unless given)."""
    return SystematicErrorModel(null.mean, mean_slope, null.sd, sd_slope)


def error_model_loglik(theta, log_rr, se, true_log_rr) -> float:
    """The log-likelihood of a systematic error model (a, b, c, d) at the controls."""
    a, b, c, d = theta
    sd = c + d * np.abs(true_log_rr)
    if np.any(sd < 0):
        return -np.inf
    return float(stats.norm.logpdf(log_rr, a + b * true_log_rr, np.sqrt(sd * sd + se * se)).sum())


def fit_systematic_error_model(log_rr, se, true_log_rr) -> SystematicErrorModel:
    """Fit mean = a + b x, sd = c + d |x| to negative and positive controls of true log RR x."""
    log_rr, se, true_log_rr = (np.asarray(a, np.float64) for a in (log_rr, se, true_log_rr))
    ok = np.isfinite(log_rr) & np.isfinite(se) & (se > 0) & np.isfinite(true_log_rr)
    log_rr, se, true_log_rr = log_rr[ok], se[ok], true_log_rr[ok]
    if np.unique(true_log_rr).size < 2:
        raise ValueError("fit_systematic_error_model needs controls of at least two true "
                         "effects (negative and positive controls); with negative controls "
                         "only, use error_model(fit_null(...)).")
    def objective(theta):        # an sd below zero anywhere is outside the model
        value = error_model_loglik(theta, log_rr, se, true_log_rr)
        return 1e300 if not np.isfinite(value) else -value

    # EmpiricalCalibration's start; Nelder-Mead to the optimum, BFGS to polish it
    fit = optimize.minimize(objective, [0.0, 1.0, 0.1, 0.0], method="Nelder-Mead",
                            options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 40_000,
                                     "maxfev": 40_000})
    polish = optimize.minimize(objective, fit.x, method="BFGS", options={"gtol": 1e-10})
    fit = polish if polish.fun <= fit.fun else fit
    return SystematicErrorModel(*map(float, fit.x))


def calibrate_ci(log_rr, se, model: SystematicErrorModel, level: float = 0.95) -> pd.DataFrame:
    """Calibrated estimates and confidence intervals on the log scale: columns log_rr,
    log_lower, log_upper and se (the interval's width / (2 z)); NaN where the estimate is not
    finite or a bound lies beyond +/-100."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    log_rr, se = (np.atleast_1d(np.asarray(a, np.float64)) for a in (log_rr, se))
    z = stats.norm.ppf((1 - level) / 2)          # negative
    rows = []
    for y, s in zip(log_rr, se):
        if not (np.isfinite(y) and np.isfinite(s)):
            rows.append((np.nan, np.nan, np.nan))
            continue
        rows.append((_bound(0.0, y, s, model), _bound(-z, y, s, model), _bound(z, y, s, model)))
    out = pd.DataFrame(rows, columns=["log_rr", "log_lower", "log_upper"])
    out["se"] = (out["log_lower"] - out["log_upper"]) / (2 * z)
    return out


def _bound(z, y, s, m: SystematicErrorModel) -> float:
    """The true effect x where (mean(x) - y) / sqrt(sd(x)^2 + s^2) = -z."""
    def f(x):
        sd = m.sd_intercept + m.sd_slope * abs(x)
        return z + (m.mean_intercept + m.mean_slope * x - y) / np.sqrt(sd * sd + s * s)
    lo, hi = f(-_BOUND), f(_BOUND)
    if np.sign(lo) == np.sign(hi):
        return np.nan
    return float(optimize.brentq(f, -_BOUND, _BOUND, xtol=1e-12, rtol=1e-14))


def _usable(log_rr, se, drop_extreme):
    log_rr, se = np.asarray(log_rr, np.float64), np.asarray(se, np.float64)
    if log_rr.shape != se.shape:
        raise ValueError(f"log_rr and se must have the same length, got {log_rr.shape} and "
                         f"{se.shape}.")
    ok = np.isfinite(log_rr) & np.isfinite(se) & (se > 0)
    if drop_extreme:
        ok &= np.abs(log_rr) <= MAX_ABS_LOG_RR
    return log_rr[ok], se[ok], int((~ok).sum())
