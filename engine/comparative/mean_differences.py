"""Covariate balance under weights as cobalt's bal.tab reports it (Greifer; Austin & Stuart
2015): the difference of the weighted means of the treated and the comparators, divided for a
continuous covariate by a standard deviation taken from the data before weighting, so that the
denominator is the same before and after adjustment and only the means move.

The standard deviation is the estimand's (cobalt's s.d.denom): "pooled" sqrt((s1^2 + s0^2) / 2)
for ATE, ATO and ATM, the treated arm's for ATT, the comparators' for ATC.  Variances use the
case weights c alone, as reliability weights: sum c (x - m)^2 sum c / ((sum c)^2 - sum c^2), the
n - 1 formula when c = 1; a binary (0/1) covariate's is p (1 - p).  A binary covariate's
difference is the raw difference of proportions by default (cobalt's binary = "raw").

(engine.comparative.balance keeps CohortMethod's convention for matching and strata: each
population's own variances, after adjustment too.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

THRESHOLD = 0.1
DENOMINATOR = {"ATT": "treated", "ATC": "control"}    # "pooled" otherwise


def _moments(X, w):
    """Weighted means and reliability-weighted variances of the columns of X (CSC)."""
    total = w.sum()
    with np.errstate(divide="ignore", invalid="ignore"):     # an empty or one-person arm: NaN
        mean = np.asarray(X.T @ w).ravel() / total
        square = np.asarray(X.multiply(X).T @ w).ravel() / total
        spread = np.maximum(square - mean * mean, 0.0) * total
        return mean, spread * total / (total * total - float(w @ w))


def mean_differences(X, names, treatment, weights, estimand: str = "ATE", case_weights=None,
                     binary: str = "raw") -> pd.DataFrame:
    """One row per column of X (n, p): type, the means of each arm and the (standardised)
    difference before (case weights only) and after ``weights``, as cobalt's bal.tab.

    weights : (n,) the balancing weights (case weights already multiplied in)
    binary : "raw" (difference of proportions) | "std" (standardised as continuous ones)
    """
    if binary not in ("raw", "std"):
        raise ValueError(f'binary must be "raw" or "std", got {binary!r}')
    X = sp.csc_matrix(X, dtype=np.float64)
    t = np.asarray(treatment).astype(bool)
    c = np.ones(t.size) if case_weights is None else np.asarray(case_weights, np.float64)
    w = np.asarray(weights, np.float64)
    other = np.r_[0, np.cumsum(~np.isin(X.data, (0.0, 1.0)))]     # values other than 0/1
    is_binary = np.diff(other[X.indptr]) == 0
    m1, v1 = _moments(X, np.where(t, c, 0.0))
    m0, v0 = _moments(X, np.where(t, 0.0, c))
    v1 = np.where(is_binary, m1 * (1.0 - m1), v1)
    v0 = np.where(is_binary, m0 * (1.0 - m0), v0)
    denominator = DENOMINATOR.get(estimand, "pooled")
    var = {"treated": v1, "control": v0, "pooled": (v1 + v0) / 2.0}[denominator]
    sd = np.sqrt(var)
    if binary == "raw":
        sd = np.where(is_binary, 1.0, sd)
    a1, _ = _moments(X, np.where(t, w, 0.0))
    a0, _ = _moments(X, np.where(t, 0.0, w))
    with np.errstate(divide="ignore", invalid="ignore"):
        before = np.where(sd > 0, (m1 - m0) / sd, np.nan)
        after = np.where(sd > 0, (a1 - a0) / sd, np.nan)
    table = pd.DataFrame({
        "covariate": list(names), "type": np.where(is_binary, "binary", "continuous"),
        "mean_treated_before": m1, "mean_control_before": m0,
        "mean_treated_after": a1, "mean_control_after": a0,
        "diff_before": before, "diff_after": after,
    })
    table["standardized"] = ~is_binary | (binary == "std")
    table["imbalanced_after"] = np.abs(after) > THRESHOLD
    table.attrs["sd_denominator"] = denominator
    return table
