"""Sums over clusters of squared influences on a curve, in O(N log N) instead of N x T.

A row's influence on a curve estimated at times t_1 < ... < t_T (a Kaplan-Meier curve's log, a
cumulative incidence) is, on each stretch of time, a fixed combination of a few functions of t
the curve itself defines (its basis: 1, the Greenwood sum H(t), the incidence F(t), ...): one
combination while the row is at risk, another once it has ended.  A cluster's influence, the
sum of its rows', is then coef_c . basis(t) with coef_c changing only where one of its rows
starts or ends.  The variance at t_k, sum_c (coef_c . basis(t_k))^2, is a quadratic form in
basis(t_k) whose matrix, sum_c coef_c coef_c', is a running sum over those O(N) changes; the
variance of a weighted sum over times (a restricted mean) sums each change's coefficients over
the times it holds.
"""
from __future__ import annotations

import numpy as np


class ClusterStates:
    """The clusters' coefficient states of one curve, from its rows (start, stop] and cluster
    codes, the changes ``at_start`` and ``at_end`` (m, N) each row makes to its cluster's m
    coefficients when it starts and ends, and the curve's sorted ``times``.  A change at time x
    holds for the curve's times >= x, until the cluster's next one."""

    def __init__(self, start, stop, cluster, at_start, at_end, times):
        when = np.column_stack((start, stop)).ravel()
        who = np.repeat(cluster, 2)
        deltas = np.stack([np.column_stack((a, b)).ravel() for a, b in zip(at_start, at_end)])
        slot = np.searchsorted(times, when, side="left")
        # in time order within each cluster; changes in one slot may come in any order (the
        # state between them holds for no time); rows listed by cluster need no sort
        key = who * np.int64(times.size + 1) + slot
        if np.any(key[1:] < key[:-1]):
            order = np.argsort(key, kind="stable")
            who, slot, deltas = who[order], slot[order], deltas[:, order]
        first = np.flatnonzero(np.concatenate(([True], who[1:] != who[:-1])))
        self.who, self.slot = who, slot
        self.coef = np.stack([_running_within(d, first) for d in deltas])
        last = np.append(who[1:] != who[:-1], True)
        self.until = np.where(last, times.size, np.roll(slot, -1))
        self.size = times.size

    def variance(self, basis):
        """sum_c (coef_c . basis(t_k))^2 at each time; ``basis`` (m, T)."""
        m = self.coef.shape[0]
        out = np.zeros(self.size)
        for a in range(m):
            for b in range(a, m):
                held = self._held(self.coef[a] * self.coef[b])
                out += (1.0 if a == b else 2.0) * held * basis[a] * basis[b]
        return np.maximum(out, 0.0)                      # rounding below an exact zero

    def integral_influence(self, weights, basis, clusters: int):
        """Each cluster's influence on sum_k weights_k curve(t_k), sum_k weights_k coef_c .
        basis(t_k), as an array over the ``clusters`` codes (the squares' sum is the variance;
        products with another curve's, over the same codes, the covariance)."""
        per_change = np.zeros(self.who.size)
        for a in range(self.coef.shape[0]):
            total = np.concatenate(([0.0], np.cumsum(weights * basis[a])))
            per_change += self.coef[a] * (total[self.until] - total[self.slot])
        return np.bincount(self.who, per_change, clusters)

    def _held(self, values):
        """At each time, the sum of ``values`` over the changes whose state holds then."""
        steps = (np.bincount(self.slot, values, self.size + 1)
                 - np.bincount(self.until, values, self.size + 1))
        return np.cumsum(steps)[:-1]


def _running_within(values, first):
    """Cumulative sums of ``values`` restarting at each index in ``first``."""
    total = np.cumsum(values)
    offset = np.repeat(total[first] - values[first], np.diff(np.append(first, values.size)))
    return total - offset
