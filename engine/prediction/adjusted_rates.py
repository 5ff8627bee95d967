"""Covariate-adjusted incidence rates of a Poisson fit by direct standardisation (the
g-formula for rates): for each level a of the treatment, the events the model expects over the
cohort's person-time with every row's treatment set to a, per unit of that person-time,

    theta_a = sum_i w_i t_i exp(x_i(a) beta) / sum_i w_i t_i,

t_i a row's person-time (stop - start; split rows add up, so the standard is the cohort's
covariate and person-time distribution), with the difference and the ratio of each level's
to the first: the adjusted rate difference and rate ratio an epidemiologist reports beside the
model's rate ratio (which they equal for a model of the treatment alone, as the crude rates).

Standard errors by the delta method, as the adjusted curves' (engine.prediction.adjusted):
g' V g, g = sum_i w_i t_i r_i(a) x_i(a) / sum_i w_i t_i the gradient in beta (V the fit's
reported covariance), plus the standardisation's own sampling variance over the subjects,
sum_c (sum_{i in c} w_i t_i (r_i(a) - theta_a))^2 / (sum_i w_i t_i)^2 (c the fit's clusters:
a subject's split rows are one); a difference takes the same terms of r_i(a) - r_i(0), a ratio
those of the log rates (Wald limits on the log scale).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_level
from ..descriptive.person_time import check_per
from ..regression.models.logistic import INTERCEPT
from ..regression.predict import covariance
from .adjusted import treatment_columns


@dataclass
class AdjustedRates:
    """What ``engine.adjusted_rates`` returns.

    rates : by level: rate (per ``per`` units of person-time), se, lower, upper (log scale)
    contrasts : level, reference (the first level), difference, se, lower, upper, ratio,
        ratio_lower, ratio_upper (the log ratio's limits)
    treatment, levels : the covariate and the levels compared; per, level as asked
    """

    rates: pd.DataFrame
    contrasts: pd.DataFrame
    treatment: str
    levels: list
    per: float
    level: float


def adjusted_rates(res, treatment: str, levels=None, per: float = 1000.0,
                   level: float = 0.95) -> AdjustedRates:
    """Adjusted incidence rates of the Poisson fit ``res`` by ``treatment`` (see the module).

    treatment : a covariate of the fit, as engine.adjusted_curves takes it (a numeric column,
        ``levels`` default its two values or 0 and 1; or a text column's levels)
    per : rates per ``per`` units of the time column; level : the limits' level
    """
    if res.spec.get("model") != "poisson":
        raise ValueError(f"adjusted rates standardise a Poisson fit's rates; this fit is "
                         f"model={res.spec.get('model')!r} (engine.adjusted_curves for Cox and "
                         "Fine-Gray fits).")
    if res.problem is None:
        raise ValueError("this FitResult keeps no data (problem=None): refit with engine.fit.")
    check_per(per)
    check_level(level)
    cohort = res.problem.cohort
    columns, settings, names = treatment_columns(cohort, treatment, levels)
    coef = res.coef.to_numpy(float)
    at = list(res.coef.index).index(INTERCEPT)
    beta = np.delete(coef, at)                       # in cohort.names order
    X = cohort.X.tocsc()
    t = np.asarray(cohort.time, float) - (0.0 if cohort.start is None
                                          else np.asarray(cohort.start, float))
    wt = t * (1.0 if cohort.weights is None else np.asarray(cohort.weights, float))
    base = np.asarray(X @ beta).ravel() - np.asarray(X[:, columns] @ beta[columns]).ravel()
    keep, V = covariance(res)
    clusters = res.problem.clusters[0]
    r, g = [], []
    for setting in settings:
        ri = np.exp(coef[at] + base + float(setting @ beta[columns]))
        u = wt * ri / wt.sum()
        gx = np.asarray(X.T @ u).ravel()
        gx[columns] = setting * u.sum()
        r.append(ri)
        g.append(np.insert(gx, at, u.sum()))
    z = stats.norm.ppf(0.5 + level / 2)
    theta = np.array([wt @ ri / wt.sum() for ri in r])
    var = np.array([_variance(gk, ri, th, wt, clusters, keep, V)
                    for gk, ri, th in zip(g, r, theta)])
    log_se = np.sqrt(var) / theta
    rates = pd.DataFrame({"rate": theta * per, "se": np.sqrt(var) * per,
                          "lower": theta * per * np.exp(-z * log_se),
                          "upper": theta * per * np.exp(z * log_se)},
                         index=pd.Index(names, name="level"))
    rows = []
    for k in range(1, len(names)):
        dv = _variance(g[k] - g[0], r[k] - r[0], theta[k] - theta[0], wt, clusters, keep, V)
        lv = _variance(g[k] / theta[k] - g[0] / theta[0], r[k] / theta[k] - r[0] / theta[0],
                       0.0, wt, clusters, keep, V)
        diff, ratio = (theta[k] - theta[0]) * per, theta[k] / theta[0]
        rows.append({"level": names[k], "reference": names[0], "difference": diff,
                     "se": np.sqrt(dv) * per, "lower": diff - z * np.sqrt(dv) * per,
                     "upper": diff + z * np.sqrt(dv) * per, "ratio": ratio,
                     "ratio_lower": ratio * np.exp(-z * np.sqrt(lv)),
                     "ratio_upper": ratio * np.exp(z * np.sqrt(lv))})
    contrasts = pd.DataFrame(rows, columns=["level", "reference", "difference", "se", "lower",
                                            "upper", "ratio", "ratio_lower", "ratio_upper"])
    return AdjustedRates(rates=rates, contrasts=contrasts, treatment=treatment,
                         levels=list(names), per=float(per), level=level)


def _variance(g, r, theta, wt, clusters, keep, V) -> float:
    """g' V g (NaN without a covariance: a penalised fit) plus the standardisation's sampling
    variance of the row values ``r`` around ``theta``, summed within ``clusters`` (codes)."""
    model = np.nan if V is None else float(g[keep] @ V @ g[keep])
    scores = np.bincount(clusters, weights=wt * (r - theta))
    return model + float(scores @ scores) / wt.sum() ** 2
