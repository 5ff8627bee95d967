"""Harrell's concordance of a Cox fit, counted as R survival's concordance(): for each event at
time t, the pairs it forms with the rows still at risk at t ({start < t <= stop}, same stratum,
the other events at t left out) are concordant when the event's linear predictor is the larger,
discordant when smaller, tied when equal; pairs weigh w_i w_j.

    C = (concordant + tied / 2) / (concordant + discordant + tied)

For right-censored data this is Harrell's C (a row censored at t is still at risk at t).  The
pairs are counted in O(N log N) with a Fenwick tree over the ranks of the linear predictor.

Its standard error is R's (concordancefit): the infinitesimal jackknife over the case weights
(summed within the fit's clusters where it was given ``cluster=``, as R's grouped jackknife),
with I_i the weighted concordant, discordant and tied pairs row i takes part in (as the event
or as the row at risk) and Somers' d = (concordant - discordant) / pairs,

    dfbeta_i = w_i [(I_con,i - I_dis,i) / pairs - d / pairs (I_con,i + I_dis,i + I_tied,i)],
    se(C) = sqrt(sum_i dfbeta_i^2) / 2,

also in O(N log N): a second sweep counts, for each row, the events whose risk set holds it.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from numba import njit

from ..core.errors import DataWarning
from .ph_test import cox_fit_rows


def concordance(res, cohort=None) -> pd.Series:
    """concordance, se (R's infinitesimal-jackknife standard error), concordant, discordant,
    tied (weighted pair counts) of the Cox fit ``res`` of ``cohort``.  A fit with cut points
    (a time-varying effect) is counted on its episodes, each (start, stop] row with its own
    linear predictor, as R's concordance of a coxph fitted to survSplit data."""
    cohort, keep, beta, _ = cox_fit_rows(res, cohort)
    eta = cohort.X[:, keep] @ beta
    rank = np.unique(eta, return_inverse=True)[1].astype(np.int64)
    stop = np.asarray(cohort.time, dtype=np.float64)
    start = (np.full(cohort.n, -np.inf) if cohort.start is None
             else np.asarray(cohort.start, dtype=np.float64))
    event = np.asarray(cohort.event) > 0
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, np.float64)
    strata = np.zeros(cohort.n, np.int64) if cohort.strata is None else cohort.strata
    counts = np.zeros(3)
    influence = np.zeros((cohort.n, 3))
    n_ranks = int(rank.max()) + 1
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        by_stop = rows[np.lexsort((event[rows], -stop[rows]))]   # non-events first in ties
        by_start = rows[np.argsort(-start[rows], kind="stable")]
        counts += pair_counts(stop, start, event, w, rank, n_ranks, by_stop, by_start,
                              influence)
        events = rows[event[rows]]
        events = events[np.argsort(stop[events], kind="stable")]
        # row j is at risk for the events in (start_j, stop_j], (start_j, stop_j) if j is one
        q_row = np.concatenate((rows, rows))
        q_time = np.concatenate((stop[rows], start[rows]))
        q_incl = np.concatenate((~event[rows], np.ones(rows.size, bool)))
        q_sign = np.concatenate((np.ones(rows.size), -np.ones(rows.size)))
        q_order = np.lexsort((q_incl, q_time))
        at_risk_side(stop[events], rank[events], w[events], q_time, q_incl, q_row, q_sign,
                     q_order, rank, n_ranks, influence)
    concordant, discordant, tied = counts
    total = concordant + discordant + tied
    se = np.nan
    if total:
        somers = (concordant - discordant) / total
        dfbeta = w * ((influence[:, 0] - influence[:, 1]) / total
                      - somers / total * influence.sum(axis=1))
        clusters = _given_clusters(res, cohort)
        if clusters is not None:        # R: summed within the fit's clusters first
            dfbeta = np.bincount(clusters, dfbeta)
        se = float(np.sqrt(np.sum(dfbeta ** 2)) / 2)
    return pd.Series({"concordance": (concordant + tied / 2) / total if total else np.nan,
                      "se": se, "concordant": concordant, "discordant": discordant,
                      "tied": tied})


def _given_clusters(res, rows):
    """The cluster of each of ``rows`` where the fit was given ``cluster=`` (R's cluster term:
    the jackknife then sums within clusters; a subject id alone does not group, as in R), else
    None; a warning where the rows are not the fit's own (a cut-point fit's episodes split
    anew)."""
    problem = getattr(res, "problem", None)
    if problem is None or res.spec.get("cluster") != "cluster":
        return None
    codes = problem.clusters[0]
    if codes.size != rows.n:
        warnings.warn("the concordance's standard error ignores the fit's clusters here (its "
                      "rows are a cut-point fit's episodes split anew); refit without "
                      "cut_points for the clustered one.", DataWarning, stacklevel=3)
        return None
    return codes


@njit(cache=True, nogil=True)
def pair_counts(stop, start, event, w, rank, n_ranks, by_stop, by_start, influence):
    """Weighted (concordant, discordant, tied) pairs among the rows ``by_stop`` (one stratum,
    by decreasing stop, non-events first among equal stops; ``by_start`` the same rows by
    decreasing start); see the module.  Adds each event's own pairs (the weights of its
    risk set's rows) to ``influence`` (n, 3)."""
    n = by_stop.size
    tree = np.zeros(n_ranks + 1)                  # Fenwick tree of weights by rank
    out = np.zeros(3)
    total = 0.0
    i_stop = 0
    i_start = 0
    k = 0
    while k < n:                                  # rows in decreasing stop order
        t = stop[by_stop[k]]
        if not event[by_stop[k]]:
            k += 1
            continue
        # enter: every row with stop > t, and the non-events with stop == t
        while i_stop < n and (stop[by_stop[i_stop]] > t or
                              (stop[by_stop[i_stop]] == t and not event[by_stop[i_stop]])):
            j = by_stop[i_stop]
            total += w[j]
            r = rank[j] + 1
            while r <= n_ranks:
                tree[r] += w[j]
                r += r & -r
            i_stop += 1
        # leave: rows that enter at or after t
        while i_start < n and start[by_start[i_start]] >= t:
            j = by_start[i_start]
            total -= w[j]
            r = rank[j] + 1
            while r <= n_ranks:
                tree[r] -= w[j]
                r += r & -r
            i_start += 1
        # the events at t against the risk set
        m = k
        while m < n and stop[by_stop[m]] == t:
            i = by_stop[m]
            if event[i]:
                below = 0.0
                r = rank[i]
                while r > 0:
                    below += tree[r]
                    r -= r & -r
                upto = 0.0
                r = rank[i] + 1
                while r > 0:
                    upto += tree[r]
                    r -= r & -r
                out[0] += w[i] * below
                out[2] += w[i] * (upto - below)
                out[1] += w[i] * (total - upto)
                influence[i, 0] += below
                influence[i, 1] += total - upto
                influence[i, 2] += upto - below
            m += 1
        k = m
    return out


@njit(cache=True, nogil=True)
def at_risk_side(ev_time, ev_rank, ev_w, q_time, q_incl, q_row, q_sign, q_order, rank, n_ranks,
                 influence):
    """Adds to ``influence`` each row's pairs as the row at risk: the summed weights of the
    events (ascending ``ev_time``) in its window, by whether their rank is larger (concordant),
    smaller (discordant) or equal (tied).  A window is the difference of two queries
    (q_time, q_incl: the events before q_time, or up to it when q_incl), swept in q_order."""
    tree = np.zeros(n_ranks + 1)
    total = 0.0
    p = 0
    for qi in q_order:
        tau = q_time[qi]
        while p < ev_time.size and (ev_time[p] < tau or (q_incl[qi] and ev_time[p] == tau)):
            r = ev_rank[p] + 1
            while r <= n_ranks:
                tree[r] += ev_w[p]
                r += r & -r
            total += ev_w[p]
            p += 1
        j = q_row[qi]
        below = 0.0
        r = rank[j]
        while r > 0:
            below += tree[r]
            r -= r & -r
        upto = 0.0
        r = rank[j] + 1
        while r > 0:
            upto += tree[r]
            r -= r & -r
        influence[j, 0] += q_sign[qi] * (total - upto)
        influence[j, 1] += q_sign[qi] * below
        influence[j, 2] += q_sign[qi] * (upto - below)
