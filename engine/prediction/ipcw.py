"""The Kaplan-Meier steps the censoring-weighted (IPCW) metrics need: the survival curve of the
data and that of its censoring times, as scikit-survival's SurvivalFunctionEstimator and
CensoringDistributionEstimator compute them (the metrics of Uno et al. 2011, Graf et al. 1999
and Hung & Chiang 2010 are defined with these weights).

The censoring curve counts an event at t as leaving the risk set before the censorings at t:

    G(t) = prod_{u <= t} (1 - c(u) / (n(u) - d(u))),

c, d the censorings and events at u and n the rows with time >= u; both curves are right-
continuous steps, 1 before the first time.
"""
from __future__ import annotations

import numpy as np

from ..core.sorted_search import searched


class Steps:
    """A right-continuous step function: ``values[k]`` on [times[k], times[k+1])."""

    def __init__(self, times: np.ndarray, values: np.ndarray):
        self.times, self.values = times, values

    def __call__(self, t) -> np.ndarray:
        """The value at each t (1 before the first step).  After the last time the curve is
        known only when it has reached 0; a time past it raises."""
        t = np.asarray(t, float)
        if self.values.size and self.values[-1] > 0 and np.any(t > self.times[-1]):
            raise ValueError(f"a time ({np.max(t):g}) lies after the last time of the data the "
                             f"curve comes from ({self.times[-1]:g}), where it is not estimated; "
                             "truncate at an earlier time (tau=, times=) or estimate the "
                             "censoring from data that reach it (train=).")
        k = searched(self.times, t.ravel()).reshape(t.shape)
        return np.concatenate(([1.0], self.values))[k]


def kaplan_meier_steps(time, event, censoring: bool = False) -> Steps:
    """The Kaplan-Meier curve of (time, event), or with ``censoring`` that of the censoring
    times (see the module)."""
    time = np.asarray(time, float)
    event = np.asarray(event, bool)
    times, group = np.unique(time, return_inverse=True)
    d = np.bincount(group, event, times.size)
    c = np.bincount(group, ~event, times.size)
    n = np.cumsum(np.bincount(group, None, times.size)[::-1])[::-1]
    if censoring:
        n, d = n - d, c
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, d / n, 0.0)
    return Steps(times, np.cumprod(1.0 - ratio))
