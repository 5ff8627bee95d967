"""Residuals of a Cox fit, as R survival's residuals.coxph: martingale, deviance, score,
dfbeta, dfbetas and partial (Therneau, Grambsch and Fleming 1990, "Martingale-based residuals
for survival models", Biometrika 77:147-160).

With hazard increments dH(t) = w_dead / S0(t) at each event time (Efron: one term per tied
death, the deaths' own risk entering k/m of the denominator, and the dying rows exposed to
the reduced increments, R's coxmart.c and coxscore2.c),

    martingale  M_i = delta_i - exp(eta_i) sum_{t in (start_i, stop_i]} dH_i(t)
    deviance    sign(M_i) sqrt(-2 (M_i + delta_i log(delta_i - M_i)))
    score       L_i = delta_i (x_i - xbar(t_i)) - exp(eta_i) sum_t (x_i - xbar(t)) dH_i(t)
    dfbeta      w_i L_i I^-1   (the change in beta when row i is left out, to first order)
    dfbetas     dfbeta_ij / sqrt((I^-1)_jj)
    partial     M_i + sum_{c in term} beta_c (x_ic - m_c)   (R's termplot residuals; m_c 0
                for a 0/1 column, else its weighted mean: survival 3.x's fit$means)

A fit with cut points (a coefficient per interval) has them on its (start, stop] episodes, as
R's coxph of survSplit data, each row's episodes then summed (R's ``collapse``): martingale,
score and dfbeta add up, and the deviance residual is taken of the row's summed martingale.

Score and dfbeta residuals are an n x p table.  They are formed a block of covariates at a
time (the dense copies of a block stay within BLOCK_BYTES), for the coefficients asked for
(``columns``), and refused with the numbers and the way out when the table itself would not
fit in the free memory, instead of the machine running out halfway.  The score residual is
linear in the covariate, so coefficient j's dfbeta, w_i sum_a L_ia (I^-1)_aj, is w_i times the
score residual of the one column X I^-1 e_j: for a few coefficients (at most half), one
column's risk-set sums each, not every covariate's (dfbeta of one coefficient at 10^6 rows x
100 dense covariates: 12.3 -> 0.85 s); for more, every covariate's L times I^-1 by BLAS, which
beats the sparse product X I^-1 there (10^6 x 100, all: 17.6 s against 21.0 s).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.linalg import blas

from .ph_test import cox_fit_rows, information
from ..core.memory import available_bytes
from ..data.episodes import episode_rows
from ..data.risk_set import RiskSets, event_time_means, event_time_terms, exposures
from ..regression.predict import column_centres, term_columns

KINDS = ("martingale", "deviance", "score", "dfbeta", "dfbetas", "partial")
# The dense working copies of one block of covariates (the block's columns, its risk-set
# means, exposures and residuals: about WORK_ARRAYS arrays of n x block) stay within this.
BLOCK_BYTES = 256 * 2 ** 20
WORK_ARRAYS = 8


def residuals(res, kind: str = "martingale", cohort=None, columns=None):
    """Residuals of the Cox fit ``res``, one per row of its cohort in the cohort's order (a
    fit with cut points: the sum over each row's episodes).

    kind : "martingale" | "deviance" (Series) | "score" | "dfbeta" | "dfbetas" (dfbeta over
        each coefficient's standard error) (DataFrame, one column per coefficient) |
        "partial" (DataFrame, one column per term: the martingale residual plus the term's
        centred linear predictor, R's termplot residuals; a spline's term is its whole
        basis; not for fits with cut points)
    cohort : the engine.Cohort that was fitted (before its cut points); default the one the
        FitResult keeps
    columns : names of the coefficients (terms, for "partial") whose residuals are wanted
        (default all with an estimate): dfbeta of the exposure alone at 10^6 rows is an 8 MB
        column, of 1,000 coefficients an 8 GB table
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    cuts = res.spec.get("cut_points")
    if kind == "partial" and cuts:
        raise ValueError("partial residuals are of a term's whole linear predictor; a fit with "
                         "cut points has a coefficient per interval. Take them of the fit "
                         "without cut points, or use the dfbeta residuals.")
    rows, keep, beta, ties = cox_fit_rows(res, cohort)
    names = [rows.names[j] for j in keep]
    # no copy of the design when every column has an estimate (10^6 x 20: 240 MB)
    design = rows.X if np.array_equal(keep, np.arange(rows.X.shape[1])) else rows.X[:, keep]
    eta = np.asarray(design @ beta)
    eta -= eta.mean()
    strata = _strata_terms(eta, rows, ties == "efron")
    subjects = (cohort if cohort is not None else res.problem.subjects) if cuts else rows
    origin = episode_rows(subjects, cuts) if cuts else None

    def per_subject(values):     # each row's episodes summed (a fit with cut points)
        return values if origin is None else np.bincount(origin, values, subjects.n)

    if kind in ("martingale", "deviance", "partial"):
        martingale = np.asarray(rows.event > 0, float)
        for t in strata:
            martingale[t.rows] -= t.risk * t.exposure
        if kind == "partial":
            return _partial(res, rows, keep, beta, design, martingale, columns)
        martingale = per_subject(martingale)
        if kind == "martingale":
            return pd.Series(martingale, name="martingale")
        delta = per_subject(np.asarray(rows.event > 0, float))
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = martingale + np.where(delta > 0, delta * np.log(delta - martingale), 0.0)
        return pd.Series(np.sign(martingale) * np.sqrt(-2.0 * inside), name="deviance")
    wanted = _wanted(names, columns)
    _check_memory(kind, subjects.n, len(wanted), rows.n, len(names))
    w = np.ones(rows.n) if rows.weights is None else np.asarray(rows.weights)
    if kind == "score":
        out = np.zeros((subjects.n, len(wanted)))
        for at in _blocks(np.arange(len(wanted)), rows.n):
            scores = _score(design[:, np.asarray(wanted)[at]].toarray(), strata, rows.n)
            out[:, at] = _by_column(lambda a: per_subject(scores[:, a]), at.size, subjects.n)
        return pd.DataFrame(out, columns=[names[j] for j in wanted])
    inverse = _inverse_information(res, cohort, keep)
    out = _dfbeta(design, inverse[:, wanted], w, strata, per_subject, subjects.n)
    if kind == "dfbetas":       # R's: dfbeta over sqrt(diag(var))
        out /= np.sqrt(np.diag(inverse))[wanted]
    return pd.DataFrame(out, columns=[names[j] for j in wanted])


def _dfbeta(design, inverse, w, strata, per_subject, n_out):
    """(n_out, k): w_i L_i I^-1 e_j for the k columns of ``inverse`` (I^-1's columns of the
    coefficients wanted).  For a few coefficients (at most half), the score residuals of the
    columns X I^-1 e_j; for more, every covariate's L times I^-1 by BLAS."""
    n, (p, k) = design.shape[0], inverse.shape
    out = np.zeros((n_out, k), order="F")
    if 2 * k > p:
        for block in _blocks(np.arange(p), n):
            scores = _score(design[:, block].toarray(), strata, n) * w[:, None]
            summed = _by_column(lambda a: per_subject(scores[:, a]), block.size, n_out)
            out = blas.dgemm(1.0, summed, inverse[block], 1.0, out, overwrite_c=True)
        return out
    for at in _blocks(np.arange(k), n):
        scores = _score(np.asarray(design @ inverse[:, at]), strata, n) * w[:, None]
        out[:, at] = _by_column(lambda a: per_subject(scores[:, a]), at.size, n_out)
    return out


def _partial(res, rows, keep, beta, design, martingale, columns):
    """Per term (predict.term_columns: the fit's formula's, or one per covariate): the
    martingale residual plus the term's part of the linear predictor, sum over its columns of
    beta_c (x_c - m_c), m R's fit$means (predict.column_centres), as predict(type="terms")."""
    where = {j: k for k, j in enumerate(keep)}      # coefficient -> column of ``design``
    terms = {term: [where[j] for j in cols if j in where]
             for term, cols in term_columns(res).items()}
    terms = {term: cols for term, cols in terms.items() if cols}
    chosen = [list(terms)[i] for i in _wanted(list(terms), columns, "terms")]
    _check_memory("partial", rows.n, len(chosen), rows.n, 1, "terms")
    centre = column_centres(rows)[keep]
    out = {}
    for term in chosen:
        cols = terms[term]
        out[term] = martingale + (design[:, cols].toarray() - centre[cols]) @ beta[cols]
    return pd.DataFrame(out)


def _wanted(names, columns, what="coefficients"):
    """Positions in ``names`` of the coefficients (or terms) asked for (all by default)."""
    if columns is None:
        return list(range(len(names)))
    columns = [columns] if isinstance(columns, str) else list(columns)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValueError(f"{what} {unknown} are not {what} of this fit with an estimate; "
                         f"choose among {names}")
    return [names.index(c) for c in columns]


def _check_memory(kind, n_out, k, n, p, what="coefficients"):
    """MemoryError with the numbers when the n_out x k table and one block's work would not
    fit in the free memory."""
    needed = 8 * n_out * k + min(BLOCK_BYTES, 8 * WORK_ARRAYS * n * max(p, 1))
    free = available_bytes()
    if needed > free:
        raise MemoryError(f"{kind} residuals of {k} {what} over {n_out:,} rows need "
                          f"about {_size(needed)}, more than the {_size(free)} free: ask for "
                          f"the {what} you need, columns=[...] (each takes "
                          f"{_size(8 * n_out)})")


def _size(nbytes):
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.0f} MB"


def _blocks(positions, n):
    """``positions`` cut into blocks whose dense working copies fit in BLOCK_BYTES."""
    size = max(1, BLOCK_BYTES // (8 * WORK_ARRAYS * max(n, 1)))
    return [positions[i:i + size] for i in range(0, positions.size, size)]


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


class _Stratum:
    """One stratum's hazard increments dH(t) = w_dead / S0(t) at its event terms and each
    row's exposure to them: what every residual of its rows reads whatever the covariates."""

    def __init__(self, rows, eta, cohort, efron):
        stop = np.asarray(cohort.time)[rows]
        start = np.zeros(rows.size) if cohort.start is None else np.asarray(cohort.start)[rows]
        w = np.ones(rows.size) if cohort.weights is None else np.asarray(cohort.weights)[rows]
        dead = np.asarray(cohort.event)[rows] > 0
        self.rows, self.dead, self.risk = rows, dead, np.exp(eta[rows])
        self.t_event = np.unique(stop[dead])
        self.sets = RiskSets(start, stop, self.t_event)
        self.lo, self.hi = self.sets.spans(start, stop)    # event times <= start, <= stop
        self.slot = self.hi[dead] - 1                          # a death's own time: the last
        self.rr = w * self.risk
        self.at_event_times = self.sets.at_event_times(self.slot, dead)
        self.when, self.share, self.frac, self.s0, _ = event_time_terms(
            self.at_event_times, self.rr, np.zeros((rows.size, 0)), self.slot,
            self.t_event.size, efron)
        size = self.t_event.size
        dead_w = np.bincount(self.slot, w[dead], minlength=size)
        self.hazard = dead_w[self.when] * self.share / self.s0     # one increment per term
        self.deaths = np.flatnonzero(dead)
        self.exposure = exposures(self.hazard, self.when, self.frac, (self.lo, self.hi),
                                  self.slot, self.deaths, size)

    def score(self, x):
        """The score residuals of the stratum's rows over the centred columns x."""
        p, size = x.shape[1], self.t_event.size
        xbar = event_time_means(self.at_event_times, self.rr, x, self.when, self.frac,
                                self.s0)
        when, hazard, frac = self.when, self.hazard, self.frac
        full_x = _by_column(lambda a: np.bincount(when, xbar[:, a] * hazard, size), p, size)
        reduced_x = _by_column(lambda a: np.bincount(when, frac * xbar[:, a] * hazard, size),
                               p, size)
        mean_x = _by_column(lambda a: np.bincount(when, self.share * xbar[:, a], size), p,
                            size)
        cum_x = np.vstack([np.zeros(p), np.cumsum(full_x, axis=0)])
        exposure_x = cum_x[self.hi] - cum_x[self.lo]
        exposure_x[self.deaths] -= (full_x - reduced_x)[self.slot]
        part = -self.risk[:, None] * (x * self.exposure[:, None] - exposure_x)
        part[self.deaths] += x[self.deaths] - mean_x[self.slot]
        return part


def _strata_terms(eta, cohort, efron):
    """The _Stratum of each stratum with an event."""
    strata = np.zeros(cohort.n, np.int64) if cohort.strata is None else cohort.strata
    out = []
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        if np.any(np.asarray(cohort.event)[rows] > 0):
            out.append(_Stratum(rows, eta, cohort, efron))
    return out


def _score(X, strata, n):
    """(n, X's columns): the score residuals of every row over the columns of X (dense),
    centred at their means."""
    X = np.asfortranarray(X, dtype=np.float64)
    X -= X.mean(axis=0)
    out = np.zeros((n, X.shape[1]))
    for t in strata:
        out[t.rows] = t.score(X[t.rows])
    return out


def _by_column(column, p, size):
    """(size, p): column a is column(a)."""
    out = np.zeros((size, p))
    for a in range(p):
        out[:, a] = column(a)
    return out
