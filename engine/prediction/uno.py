"""Uno's concordance: Harrell's C with pairs weighted by inverse censoring probabilities, so
that it estimates P(risk_i > risk_j | T_i < T_j, T_i < tau) whatever the censoring (Uno, Cai,
Pencina, D'Agostino & Wei, "On the C-statistics for evaluating overall adequacy of risk
prediction procedures with censored survival data", Statistics in Medicine 2011).

An event i (time t_i < tau) weighs 1/G(t_i)^2, G the censoring Kaplan-Meier (ipcw.py); it is
compared with every row still under observation after t_i (and those censored at t_i), scoring 1
when its risk is the higher and 1/2 when they tie (within ``tied_tol``).  Counted in
O(N log N) with a Fenwick tree over the ranks of the risks, as scikit-survival's
concordance_index_ipcw defines it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .ipcw import kaplan_meier_steps
from .survival_data import checked, train_or_test


def uno_concordance(time, event, risk, train=None, tau=None, tied_tol: float = 1e-8) -> float:
    """Uno's C of the risk scores ``risk`` (higher = earlier event) on (time, event).

    train : (time, event) the censoring distribution is estimated from (default: these data);
    tau : only events before tau count (default: all; G must be positive at the last event).
    """
    time, event = checked(time, event)
    risk = np.asarray(risk, float)
    if risk.shape != time.shape or not np.all(np.isfinite(risk)):
        raise ValueError("risk must be one finite score per row of time.")
    G = kaplan_meier_steps(*train_or_test(train, time, event), censoring=True)
    counted = event if tau is None else event & (time < tau)
    g = G(time[counted])
    if np.any(g == 0):
        raise ValueError("the censoring survival is 0 at an event time: choose tau before it.")
    weight = np.zeros(time.size)
    weight[counted] = 1.0 / g ** 2
    order = np.argsort(time, kind="mergesort")
    num, den = weighted_pairs(time[order], event[order], tie_ranks(risk, tied_tol)[order],
                              weight[order])
    if den == 0:
        raise ValueError("no comparable pairs: the concordance is not defined.")
    return num / den


def tie_ranks(risk: np.ndarray, tied_tol: float) -> np.ndarray:
    """Dense ranks of the risks, neighbours within ``tied_tol`` merged into one rank."""
    order = np.argsort(risk, kind="mergesort")
    step = np.diff(risk[order]) > tied_tol
    ranks = np.empty(risk.size, np.int64)
    ranks[order] = np.concatenate(([0], np.cumsum(step)))
    return ranks


@njit(cache=True)
def weighted_pairs(time, event, rank, weight):
    """(sum over comparable pairs of w_i (concordant + tied/2), sum of w_i) for rows sorted by
    ascending time; see the module."""
    n = time.size
    n_ranks = rank.max() + 1
    tree = np.zeros(n_ranks + 1)
    inside = 0.0
    num = 0.0
    den = 0.0
    end = n
    while end > 0:
        start = end - 1
        while start > 0 and time[start - 1] == time[end - 1]:
            start -= 1
        for k in range(start, end):          # censored at t are compared with events at t
            if not event[k]:
                r = rank[k] + 1
                while r <= n_ranks:
                    tree[r] += 1.0
                    r += r & -r
                inside += 1.0
        for k in range(start, end):
            if event[k] and weight[k] > 0:
                below = 0.0
                r = rank[k]
                while r > 0:
                    below += tree[r]
                    r -= r & -r
                upto = 0.0
                r = rank[k] + 1
                while r > 0:
                    upto += tree[r]
                    r -= r & -r
                num += weight[k] * (below + 0.5 * (upto - below))
                den += weight[k] * inside
        for k in range(start, end):
            if event[k]:
                r = rank[k] + 1
                while r <= n_ranks:
                    tree[r] += 1.0
                    r += r & -r
                inside += 1.0
        end = start
    return num, den
