"""Weighted risk-set sizes at chosen times for (start, stop] rows: the count behind every
Kaplan-Meier step and log-rank term, and the risk-set moments of the PH test."""
from __future__ import annotations

import numpy as np


class RiskSets:
    """The risk sets {start < t <= stop} at the given times, sorted once so that the sums of
    many weight vectors over them cost O(N) each.

    Parameters
    ----------
    start, stop : ndarray (n,), entry and exit times
    times : ndarray (m,)
    """

    def __init__(self, start, stop, times):
        self.by_stop = np.argsort(stop)
        self.ended = np.searchsorted(stop[self.by_stop], times, side="left")       # stop < t
        # without late entry (every start before the first time) all rows have entered
        self.late = start.size > 0 and times.size > 0 and bool(np.max(start) >= np.min(times))
        if self.late:
            self.by_start = np.argsort(start)
            self.entered = np.searchsorted(start[self.by_start], times, side="left")  # start < t

    def sums(self, w):
        """sum of w over each risk set; shape (m,)."""
        ended = np.concatenate(([0.0], np.cumsum(w[self.by_stop])))[self.ended]
        if not self.late:
            return w.sum() - ended
        entered = np.concatenate(([0.0], np.cumsum(w[self.by_start])))[self.entered]
        return entered - ended


def risk_set_sums(start, stop, w, times):
    """sum of w over rows with start < t <= stop, for each t in ``times``; O((N + T) log N)."""
    return RiskSets(start, stop, times).sums(w)
