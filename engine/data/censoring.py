"""Kaplan-Meier estimate of the censoring distribution, for inverse-probability-of-censoring
weights (Fine & Gray 1999; Yang2022 sec. 2.2).

Censored rows are the "events" of this Kaplan-Meier and every row is at risk until its own
time, case weights counting as in a weighted Kaplan-Meier:

    G(t-) = prod_{u < t} (1 - dC(u) / Y(u)),   dC(u) = sum of w over rows censored at u,
                                               Y(u)  = sum of w over rows with time >= u.

The left limit is what cmprsk::crr evaluates (at ``ftime * (1 - eps)``): a censoring at t does
not change the weight of anything at t.  One G per censoring group (one group for the whole
cohort, or one per stratum).

Censorings tied with events (``ties``): crr counts the rows with an event at u in Y(u)
("crr"); R survival's ``finegray()`` follows Geskus (2011, "Cause-specific cumulative incidence
estimation and the Fine and Gray model under both left truncation and right censoring",
Biometrics) and does not: an event at u happens before a censoring at u, so Y(u) holds the rows
with time > u and those censored at u ("finegray").
"""
from __future__ import annotations

import numpy as np
from numba import njit

CENSORING_TIES = ("crr", "finegray")


def left_limits(time: np.ndarray, censored: np.ndarray, weights: np.ndarray,
                group: np.ndarray, ties: str = "crr") -> np.ndarray:
    """G(time_i -) of each row's censoring group, evaluated at the row's own time.

    Parameters
    ----------
    time : (n,) float64
    censored : (n,) bool, rows that end censored
    weights : (n,) float64, case weights
    group : (n,) int64, censoring group of each row (all zeros for one G)
    ties : "crr" | "finegray", who is at risk for a censoring tied with an event (above)

    Returns
    -------
    (n,) float64, each value in (0, 1]
    """
    time = np.asarray(time, np.float64)
    group = np.asarray(group, np.int64)
    order = np.lexsort((-time, group))              # by group, time descending
    out = np.empty(time.size)
    out[order] = _left_limits_sorted(time[order], np.asarray(censored, bool)[order],
                                     np.asarray(weights, np.float64)[order], group[order],
                                     ties == "finegray")
    return out


@njit(cache=True, nogil=True)
def _left_limits_sorted(time, censored, w, group, events_first):
    """The product-limit over rows sorted by group then time descending: a backward scan
    (ascending time) that multiplies in 1 - dC(u)/Y(u) after each block of equal times, Y(u)
    being the group's total weight less the weight of the rows already passed (and, with
    ``events_first``, less the block's events)."""
    n = time.size
    out = np.empty(n)
    hi = n
    while hi > 0:
        lo = hi - 1
        while lo > 0 and group[lo - 1] == group[hi - 1]:
            lo -= 1
        at_risk = 0.0
        for i in range(lo, hi):
            at_risk += w[i]
        G = 1.0
        b = hi
        while b > lo:
            a = b - 1
            while a > lo and time[a - 1] == time[b - 1]:
                a -= 1
            dc = 0.0
            left = 0.0
            for i in range(a, b):
                out[i] = G
                left += w[i]
                if censored[i]:
                    dc += w[i]
            if dc > 0.0:
                G *= 1.0 - dc / (at_risk - (left - dc) if events_first else at_risk)
            at_risk -= left
            b = a
        hi = lo
    return out
