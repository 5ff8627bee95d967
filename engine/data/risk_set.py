"""Weighted risk-set sizes at chosen times for (start, stop] rows: the count behind every
Kaplan-Meier step and log-rank term, and the risk-set moments of the PH test."""
from __future__ import annotations

import numpy as np

from ..core.sorted_search import searched


class RiskSets:
    """The risk sets {start < t <= stop} at the given times, sorted once so that the sums of
    many weight vectors over them cost O(N) each.

    Parameters
    ----------
    start, stop : ndarray (n,), entry and exit times
    times : ndarray (m,)
    """

    def __init__(self, start, stop, times):
        self.times = times
        # rows already in stop order (as the PH test lays them out) are read as they are
        in_order = stop.size < 2 or bool(np.all(stop[1:] >= stop[:-1]))
        self.by_stop = None if in_order else np.argsort(stop)
        self.ended = np.searchsorted(_ordered(stop, self.by_stop), times, side="left")  # stop < t
        # without late entry (every start before the first time) all rows have entered
        self.late = start.size > 0 and times.size > 0 and bool(np.max(start) >= np.min(times))
        if self.late:
            self.by_start = np.argsort(start)
            self.entered = np.searchsorted(start[self.by_start], times, side="left")  # start < t

    def spans(self, start, stop):
        """(lo, hi): how many of the times are <= each row's start and <= its stop (``start``
        and ``stop`` as given to the constructor), so that row i is at risk at times[lo:hi];
        searched in the rows' sorted orders (engine.core.sorted_search)."""
        hi = _searched(self.times, stop, self.by_stop)
        if not self.late:       # every start before the first time
            return np.zeros(stop.size, np.int64), hi
        return _searched(self.times, start, self.by_start), hi

    def sums(self, w):
        """sum of w over each risk set; shape (m,)."""
        ended = _running(_ordered(w, self.by_stop))[self.ended]
        if not self.late:
            return w.sum() - ended
        return _running(w[self.by_start])[self.entered] - ended

    def at_event_times(self, slot, dead):
        """The ``at_event_times`` of event_time_terms for these risk sets at the event times
        (``times``): values (n,) -> their risk-set sums and their sums over the rows ``dead``
        at each time (``slot``: each death's time's position)."""
        size = self.times.size
        return lambda values: (self.sums(values), np.bincount(slot, values[dead], size))


def _running(w):
    """0, then the running sums of w."""
    return np.concatenate(([0.0], np.cumsum(w)))


def _ordered(values, order):
    """values in ``order`` (None: as they are)."""
    return values if order is None else values[order]


def _searched(times, values, order):
    """How many of the sorted ``times`` are <= each value, ``order`` sorting the values (None:
    sorted already)."""
    if order is None:
        return np.searchsorted(times, values, side="right")
    return searched(times, values, order=order)


def risk_set_sums(start, stop, w, times):
    """sum of w over rows with start < t <= stop, for each t in ``times``; O((N + T) log N)."""
    return RiskSets(start, stop, times).sums(w)


def event_time_terms(at_event_times, rr, x, slot, size, efron):
    """The terms of each event time's likelihood contribution, flattened: one per time
    (Breslow), or one per tied death k = 1..m with k/m of the deaths' risk left in the risk
    set (Efron).  Returns, per term: its time, share of the dead weight (1 or 1/m), k/m,
    S0 and the mean of x, shape (E, p) (p may be 0: the terms without means)."""
    s0_all, d0_all = at_event_times(rr)
    m = np.bincount(slot, minlength=size)
    if efron:
        time = np.repeat(np.arange(size), m)
        k = np.arange(time.size) - np.repeat(np.cumsum(m) - m, m) + 1.0
        frac, share = k / m[time], 1.0 / m[time]
    else:
        time, frac, share = np.arange(size), np.ones(size), np.ones(size)
    s0 = s0_all[time] - (1 - frac) * d0_all[time]
    return time, share, frac, s0, event_time_means(at_event_times, rr, x, time, frac, s0)


def exposures(increments, time, frac, spans, slot, deaths, size):
    """Each row's sum of the per-term ``increments`` (one per term of event_time_terms, at its
    ``time`` with its k/m ``frac``) over the event times it is at risk for, ``spans`` = (lo,
    hi) of RiskSets.spans; a dying row takes only k/m of its own time's (Efron's share, ``slot``
    its time, ``deaths`` its position).  What turns a sum over risk sets into one over rows:
    sum_t c_t sum_{i at risk} v_i = sum_i v_i exposures_i."""
    lo, hi = spans
    full = np.bincount(time, increments, size)
    cum = _running(full)
    out = cum[hi] - cum[lo]
    out[deaths] -= (full - np.bincount(time, frac * increments, size))[slot]
    return out


def event_time_means(at_event_times, rr, x, time, frac, s0):
    """The risk-set means of x's columns at each term of ``event_time_terms`` (its time, k/m
    and S0), shape (E, p), column-major: the part that grows with the columns, so that they
    can be taken a block at a time."""
    out = np.empty((time.size, x.shape[1]), order="F")
    for a in range(x.shape[1]):
        s1_all, d1_all = at_event_times(rr * x[:, a])
        out[:, a] = (s1_all[time] - (1 - frac) * d1_all[time]) / s0
    return out
