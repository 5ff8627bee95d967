"""Weighted risk-set sizes at chosen times for (start, stop] rows: the count behind every
Kaplan-Meier step and log-rank term."""
from __future__ import annotations

import numpy as np


def risk_set_sums(start, stop, w, times):
    """sum of w over rows with start < t <= stop, for each t in ``times``; O((N + T) log N).

    Parameters
    ----------
    start, stop, w : ndarray (n,), entry and exit times and case weights
    times : ndarray (m,)
    """
    by_stop, by_start = np.argsort(stop), np.argsort(start)
    ended = np.concatenate(([0.0], np.cumsum(w[by_stop])))[
        np.searchsorted(stop[by_stop], times, side="left")]            # stop < t
    entered = np.concatenate(([0.0], np.cumsum(w[by_start])))[
        np.searchsorted(start[by_start], times, side="left")]          # start < t
    return entered - ended
