"""Harrell's concordance of a fitted Cox model: how often the subject with the higher risk score
fails first.

A pair (i, j) of one stratum is comparable when i has an event at t_i and j is still followed
after it (t_j > t_i, or t_j = t_i and j censored); it is concordant when eta_i > eta_j and
counts 1/2 when the scores tie.  C = (concordant + ties / 2) / comparable, each pair weighted
by w_i w_j: Harrell's C as R's ``concordance`` (the pairs of one stratum only) and
scikit-survival's ``concordance_index_censored``.  Counted in O(N log N) per stratum by a
Fenwick tree over the ranks of the scores, walking the times from the last.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit


@dataclass(frozen=True)
class Concordance:
    """C and its pair counts (weighted)."""

    c: float
    concordant: float
    discordant: float
    tied_risk: float
    comparable: float


def concordance(res) -> Concordance:
    """Harrell's C of a Cox fit on the data it was fitted to (one row per subject)."""
    problem = getattr(res, "problem", None)
    if problem is None or problem.options.model != "cox":
        raise ValueError("concordance is defined here for Cox fits (engine.fit(model='cox')).")
    c = problem.cohort
    if c.start is not None:
        raise ValueError("concordance needs one row per subject; this fit's data has entry "
                         "times or cut-point episodes. Fit the subjects without start= and "
                         "cut_points to compare their risk scores.")
    beta = np.nan_to_num(res.coef.to_numpy(), nan=0.0)
    eta = np.asarray(c.X @ beta).ravel()
    w = np.ones(c.n) if c.weights is None else np.asarray(c.weights, np.float64)
    strata = np.zeros(c.n, np.int64) if c.strata is None else np.asarray(c.strata, np.int64)
    return harrell(np.asarray(c.time, np.float64), np.asarray(c.event) > 0, eta, w, strata)


def harrell(time, event, eta, w, strata) -> Concordance:
    """Harrell's C of scores ``eta`` (higher = earlier failure) within ``strata``."""
    order = np.lexsort((-time, strata)).astype(np.int64)
    rank = np.unique(eta, return_inverse=True)[1].astype(np.int64)
    con, tie, comp = _pair_counts(order, np.asarray(time, np.float64), event.astype(np.bool_),
                                  rank, np.asarray(w, np.float64),
                                  np.asarray(strata, np.int64), int(rank.max()) + 1)
    if not comp > 0:
        raise ValueError("no comparable pairs: concordance needs an event followed by a "
                         "subject still at risk after it.")
    return Concordance(c=(con + 0.5 * tie) / comp, concordant=con,
                       discordant=comp - con - tie, tied_risk=tie, comparable=comp)


@njit(cache=True)
def _pair_counts(order, time, event, rank, w, strata, n_ranks):
    """Walk each stratum from its last time; a Fenwick tree over score ranks holds the weights
    of the rows seen (followed beyond the current time).  Per block of equal times the censored
    rows go in before the events are counted (they are comparable), the events after."""
    tree = np.zeros(n_ranks + 1)
    con = tie = comp = 0.0
    n = order.size
    a = 0
    while a < n:
        s = strata[order[a]]
        b = a
        while b < n and strata[order[b]] == s:
            b += 1
        inserted = 0.0
        i = a
        while i < b:
            t = time[order[i]]
            e = i
            while e < b and time[order[e]] == t:
                e += 1
            for q in range(i, e):
                k = order[q]
                if not event[k]:
                    inserted += w[k]
                    _add(tree, rank[k] + 1, w[k])
            for q in range(i, e):
                k = order[q]
                if event[k]:
                    below = _sum(tree, rank[k])
                    same = _sum(tree, rank[k] + 1) - below
                    con += w[k] * below
                    tie += w[k] * same
                    comp += w[k] * inserted
            for q in range(i, e):
                k = order[q]
                if event[k]:
                    inserted += w[k]
                    _add(tree, rank[k] + 1, w[k])
            i = e
        for q in range(a, b):                       # empty the tree for the next stratum
            _add(tree, rank[order[q]] + 1, -w[order[q]])
        a = b
    return con, tie, comp


@njit(cache=True)
def _add(tree, i, v):
    while i < tree.size:
        tree[i] += v
        i += i & (-i)


@njit(cache=True)
def _sum(tree, i):
    """Sum of the weights at ranks below i (1-based prefix)."""
    s = 0.0
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s
