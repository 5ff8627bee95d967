"""Times that differ only by floating-point rounding are one time: among the distinct start and
stop times, sorted, each that follows the one before by at most 1e-12 of the largest time takes
the first value of its run.  Without it 0.1 + 0.2 and 0.3 are two event times, and an episode
that starts where the previous one ended, computed another way, overlaps it.

R's survival does this by default (timefix = TRUE, survival::aeqSurv) with a wider tolerance,
sqrt(machine epsilon) = 1.5e-8 of the times' mean: at 10^6 continuous times that also merges
some 1,500 pairs of times that are merely close (exponential follow-up, mean 5), which lifelines
and scikit-survival keep apart.  Rounding, not closeness, is what the fix is for: arithmetic
leaves differences of a few units in the last place (1e-16 relative), far below 1e-12.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import CohortError
from .validation import describe_rows

TOLERANCE = 1e-12


def fixed_times(time, start=None, names=None, labels=None):
    """(time, start) with near-equal values made equal; the inputs themselves when there are
    none (whole numbers, such as days, never are).  A CohortError names the rows whose
    (start, stop] would have no length left."""
    values = time if start is None else np.concatenate((start, time))
    if np.array_equal(values, np.round(values)):
        return time, start
    y = np.unique(values)
    tied = np.diff(y) <= TOLERANCE * np.max(np.abs(y))
    if not tied.any():
        return time, start
    cuts = y[np.concatenate(([True], ~tied))]
    moved = y[1:][tied]                                   # few: their rows are looked up
    to = cuts[np.searchsorted(cuts, moved, side="right") - 1]
    at = np.minimum(np.searchsorted(moved, values), moved.size - 1)
    hit = moved[at] == values
    fixed = values.copy()
    fixed[hit] = to[at[hit]]
    if start is None:
        return fixed, None
    new_start, new_time = fixed[:start.size], fixed[start.size:]
    empty = np.flatnonzero(new_start >= new_time)
    if empty.size:
        names = names or {"start": "start", "time": "time"}
        pairs = [f"({a!r}, {b!r}]" for a, b in zip(start[empty[:5]].tolist(),
                                                   time[empty[:5]].tolist())]
        raise CohortError(
            f"columns {names['start']!r} and {names['time']!r} have {empty.size} episode(s) "
            f"shorter than rounding ({TOLERANCE:.0e} of the largest time): "
            f"{describe_rows(empty, pairs, labels, str)}. Remove them, or merge them into the "
            "next episode (R's survival refuses them too: aeqSurv).")
    return new_time, new_start
