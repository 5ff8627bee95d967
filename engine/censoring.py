"""Kaplan-Meier estimate of the censoring distribution, for inverse-probability-of-censoring
weights (Fine & Gray 1999; seed 001 sec. 2.2).

Censored rows are the "events" of this Kaplan-Meier and every row is at risk until its own
time, case weights counting as in a weighted Kaplan-Meier:

    G(t-) = prod_{u < t} (1 - dC(u) / Y(u)),   dC(u) = sum of w over rows censored at u,
                                               Y(u)  = sum of w over rows with time >= u.

The left limit is what cmprsk::crr evaluates (at ``ftime * (1 - eps)``): a censoring at t does
not change the weight of anything at t.  One G per censoring group (one group for the whole
cohort, or one per stratum).
"""
from __future__ import annotations

import numpy as np


def left_limits(time: np.ndarray, censored: np.ndarray, weights: np.ndarray,
                group: np.ndarray) -> np.ndarray:
    """G(time_i -) of each row's censoring group, evaluated at the row's own time.

    Parameters
    ----------
    time : (n,) float64
    censored : (n,) bool, rows that end censored
    weights : (n,) float64, case weights
    group : (n,) int64, censoring group of each row (all zeros for one G)

    Returns
    -------
    (n,) float64, each value in (0, 1]
    """
    time = np.asarray(time, np.float64)
    w = np.asarray(weights, np.float64)
    dc = np.where(censored, w, 0.0)
    out = np.empty(time.size)
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        u, inv = np.unique(time[rows], return_inverse=True)          # ascending distinct times
        at_u = np.bincount(inv, weights=w[rows], minlength=u.size)
        cens_u = np.bincount(inv, weights=dc[rows], minlength=u.size)
        at_risk = np.cumsum(at_u[::-1])[::-1]                           # Y(u): time >= u
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(at_risk > 0, 1.0 - cens_u / at_risk, 1.0)
        surv = np.cumprod(factor)                                       # G(u), right-continuous
        before = np.concatenate(([1.0], surv[:-1]))                     # G(u-)
        out[rows] = before[inv]
    return out
