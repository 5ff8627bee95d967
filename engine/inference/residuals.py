"""Residuals of a Cox fit, as R survival's residuals.coxph: martingale, deviance, score and
dfbeta (Therneau, Grambsch and Fleming 1990, "Martingale-based residuals for survival models",
Biometrika 77:147-160).

With hazard increments dH(t) = w_dead / S0(t) at each event time (Efron: one term per tied
death, the deaths' own risk entering k/m of the denominator, and the dying rows exposed to
the reduced increments, R's coxmart.c and coxscore2.c),

    martingale  M_i = delta_i - exp(eta_i) sum_{t in (start_i, stop_i]} dH_i(t)
    deviance    sign(M_i) sqrt(-2 (M_i + delta_i log(delta_i - M_i)))
    score       L_i = delta_i (x_i - xbar(t_i)) - exp(eta_i) sum_t (x_i - xbar(t)) dH_i(t)
    dfbeta      w_i L_i I^-1   (the change in beta when row i is left out, to first order)

A fit with cut points (a coefficient per interval) has them on its (start, stop] episodes, as
R's coxph of survSplit data, each row's episodes then summed (R's ``collapse``): martingale,
score and dfbeta add up, and the deviance residual is taken of the row's summed martingale.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .ph_test import cox_fit_rows, information
from ..data.episodes import episode_rows
from ..data.risk_set import RiskSets, event_time_terms

KINDS = ("martingale", "deviance", "score", "dfbeta")


def residuals(res, kind: str = "martingale", cohort=None):
    """Residuals of the Cox fit ``res``, one per row of its cohort in the cohort's order (a
    fit with cut points: the sum over each row's episodes).

    kind : "martingale" | "deviance" (Series) | "score" | "dfbeta" (DataFrame, one column
        per coefficient)
    cohort : the engine.Cohort that was fitted (before its cut points); default the one the
        FitResult keeps
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rows, keep, beta, ties = cox_fit_rows(res, cohort)
    names = [rows.names[j] for j in keep]
    design = rows.X[:, keep]
    eta = np.asarray(design @ beta)
    eta -= eta.mean()
    # martingale and deviance residuals need neither the dense covariates nor their means
    # (bench.residuals 1000000 20: 1.1 s, not 3.7, and no dense n x p array)
    X = np.zeros((rows.n, 0))
    if kind in ("score", "dfbeta"):
        X = np.asfortranarray(design.toarray())
        X -= X.mean(axis=0)
    martingale, by_column = _martingale_and_score(X, eta, rows, ties == "efron")
    delta = (np.asarray(rows.event) > 0).astype(float)
    if kind == "dfbeta":        # w_i L_i I^-1
        w = np.ones(rows.n) if rows.weights is None else np.asarray(rows.weights)
        by_column = (w[:, None] * by_column) @ _inverse_information(res, cohort, keep)
    cuts = res.spec.get("cut_points")
    if cuts:                    # each row's episodes summed
        subjects = cohort if cohort is not None else res.problem.subjects
        origin = episode_rows(subjects, cuts)
        martingale, delta = (np.bincount(origin, x, subjects.n) for x in (martingale, delta))
        episodes = by_column
        by_column = _by_column(lambda a: np.bincount(origin, episodes[:, a], subjects.n),
                               episodes.shape[1], subjects.n)
    if kind == "martingale":
        return pd.Series(martingale, name="martingale")
    if kind == "deviance":
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = martingale + np.where(delta > 0, delta * np.log(delta - martingale), 0.0)
        return pd.Series(np.sign(martingale) * np.sqrt(-2.0 * inside), name="deviance")
    return pd.DataFrame(by_column, columns=names)


def _inverse_information(res, cohort, keep):
    """I^-1 over the columns ``keep``: the fit's own model-based covariance (R's ``var``, what
    its dfbeta reads), from the engine's information kernels (10^6 x 20: 0.1 s, against 12.8 s
    for the PH test's moments); the PH test's where the fit keeps no live data."""
    problem = getattr(res, "problem", None)
    if problem is not None and not problem.released:
        cov = res.cov_model.to_numpy()[np.ix_(keep, keep)]
        if np.all(np.isfinite(cov)):
            return cov
    return np.linalg.inv(information(res, cohort).to_numpy())


def _martingale_and_score(X, eta, cohort, efron):
    """(martingale, score) of every row; the score over X's columns (none: martingale only)."""
    n, p = X.shape
    stop = np.asarray(cohort.time)
    start = np.zeros(n) if cohort.start is None else np.asarray(cohort.start)
    event = np.asarray(cohort.event) > 0
    w = np.ones(n) if cohort.weights is None else np.asarray(cohort.weights)
    strata = np.zeros(n, np.int64) if cohort.strata is None else cohort.strata
    risk = np.exp(eta)
    martingale = event.astype(float)
    score = np.zeros((n, p))
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        x, dead = X[rows], event[rows]
        t_event = np.unique(stop[rows][dead])
        if t_event.size == 0:
            continue
        sets = RiskSets(start[rows], stop[rows], t_event)
        slot = np.searchsorted(t_event, stop[rows][dead])
        rr = w[rows] * risk[rows]

        def at_event_times(values):
            return sets.sums(values), np.bincount(slot, values[dead], t_event.size)

        when, share, frac, s0, xbar = event_time_terms(at_event_times, rr, x, slot,
                                                       t_event.size, efron)
        dead_w = np.bincount(slot, w[rows][dead], minlength=t_event.size)
        hazard = dead_w[when] * share / s0               # one increment per term
        size = t_event.size
        full = np.bincount(when, hazard, size)           # exposure of rows that survive t
        reduced = np.bincount(when, frac * hazard, size)  # of the rows dying at t
        full_x = _by_column(lambda a: np.bincount(when, xbar[:, a] * hazard, size), p, size)
        reduced_x = _by_column(lambda a: np.bincount(when, frac * xbar[:, a] * hazard, size),
                               p, size)
        mean_x = _by_column(lambda a: np.bincount(when, share * xbar[:, a], size), p, size)
        cum = np.concatenate(([0.0], np.cumsum(full)))
        cum_x = np.vstack([np.zeros(p), np.cumsum(full_x, axis=0)])
        hi = np.searchsorted(t_event, stop[rows], side="right")    # event times <= stop
        lo = np.searchsorted(t_event, start[rows], side="right")   # event times <= start
        exposure = cum[hi] - cum[lo]
        exposure_x = cum_x[hi] - cum_x[lo]
        deaths = np.flatnonzero(dead)
        exposure[deaths] -= (full - reduced)[slot]
        exposure_x[deaths] -= (full_x - reduced_x)[slot]
        martingale[rows] -= risk[rows] * exposure
        part = -risk[rows][:, None] * (x * exposure[:, None] - exposure_x)
        part[deaths] += x[deaths] - mean_x[slot]
        score[rows] = part
    return martingale, score


def _by_column(column, p, size):
    """(size, p): column a is column(a)."""
    out = np.zeros((size, p))
    for a in range(p):
        out[:, a] = column(a)
    return out
