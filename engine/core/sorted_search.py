"""np.searchsorted for many values in any order.

NumPy narrows each binary search by the one before when the values come sorted, so that a
search of 10^6 rows' times among 5 x 10^5 distinct event times takes 0.02 s in sorted order
and 0.25 s in the rows' order (the random probes miss the cache); with a stable sort of its
own first, 0.15 s, and with an order the caller has (a risk set's), 0.05 s (Intel Xeon).
Residuals, the PH test, the censoring weights and the time-dependent AUC search every row's
time at 10^6 rows.
"""
from __future__ import annotations

import numpy as np

# fewer values are searched as they come (the sort would cost more than it saves)
SORT_FROM = 1 << 14


def searched(times, values, side: str = "right", order=None) -> np.ndarray:
    """np.searchsorted(times, values, side) for 1-D ``values``, searched in their sorted order
    (``order``, when the caller has it)."""
    values = np.asarray(values)
    if values.size < SORT_FROM and order is None:
        return np.searchsorted(times, values, side=side)
    if order is None:
        order = np.argsort(values, kind="stable")
    out = np.empty(values.size, np.int64)
    out[order] = np.searchsorted(times, values[order], side=side)
    return out
