"""Predictions of a Cox fit for new covariate rows, as R's ``predict.coxph(se.fit=TRUE)`` and
``survfit(fit, newdata)``: the linear predictor, the relative risk, the expected number of events
(cumulative hazard over a row's follow-up), and survival curves with pointwise confidence limits.

Standard errors follow R: the linear predictor's from the coefficients' covariance V,
sqrt((z - c)' V (z - c)); the cumulative hazard's from Tsiatis' variance (engine.prediction.
baseline), which adds the baseline hazard's own variance to the coefficients'.  Confidence limits
of a survival curve are taken on the cumulative hazard H with se(H) (R's conf.type):

    "log"      exp(-(H +/- z se)), the upper capped at 1
    "log-log"  exp(-H exp(+/- z se / H)), NaN where H = 0 (as R)
    "plain"    S -/+ z S se, clipped to [0, 1]

A penalised fit has no covariance (the penalty makes it undefined): its predictions come without
standard errors (NaN).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import DataWarning
from .baseline import fit_means

TYPES = ("lp", "risk", "expected", "survival", "terms")
CONF_TYPES = ("log", "log-log", "plain")
REFERENCES = ("sample", "strata", "zero")


def checked_times(times, increasing: bool = False) -> np.ndarray:
    """Times asked of a predicted curve: a 1-d float array, finite and >= 0 (and increasing
    where ``increasing``); a ValueError naming the first bad one otherwise."""
    t = np.atleast_1d(np.asarray(times, float))
    order = "increasing " if increasing else ""
    if t.ndim != 1:
        raise ValueError(f"times must be a 1-d list of {order}times, got shape {t.shape}.")
    bad = np.flatnonzero(~np.isfinite(t) | (t < 0))
    if bad.size:
        raise ValueError(f"times must be finite{', increasing' if increasing else ''} and >= 0 "
                         f"(time since the start of follow-up); got {t[bad[0]]:g} at position "
                         f"{bad[0]}.")
    if increasing and np.any(np.diff(t) <= 0):
        raise ValueError(f"times must be finite, increasing and >= 0; got {t.tolist()[:10]}: "
                         "sort them and drop repeats.")
    return t


def cox_baseline(res):
    """``res.baseline`` after checking that ``res`` is a Cox fit predictions are defined for."""
    cox_baseline_checked(res)
    return res.baseline


def cox_baseline_checked(res) -> None:
    """Raise unless ``res`` is a finite Cox fit without cut points that keeps its data."""
    spec = res.spec
    if spec.get("model") != "cox":
        hint = (" Use res.predict_cif for a Fine-Gray fit." if spec.get("model") == "fine_gray"
                else "")
        raise ValueError(f"baseline hazards and predicted curves are for Cox fits; this fit is "
                         f"model={spec.get('model')!r}.{hint}")
    if spec.get("cut_points"):
        raise ValueError("this fit has cut points (time-varying coefficients): a row's curve "
                         "depends on its path through the intervals, which newdata does not "
                         "give. Predict from a fit without cut_points.")
    if res.problem is None:
        raise ValueError("this FitResult keeps no data (problem=None): refit with engine.fit.")
    if np.isinf(res.coef.to_numpy(float)).any():
        raise ValueError(f"coefficients {list(res.coef.index[np.isinf(res.coef)])} diverge "
                         "(+/-inf): predictions need a finite fit (remove or merge those "
                         "columns, or add a penalty).")


def covariance(res) -> tuple[np.ndarray, np.ndarray]:
    """(columns with a finite estimate, their covariance); the covariance is None for a
    penalised fit (no standard errors)."""
    keep = np.flatnonzero(np.isfinite(res.coef.to_numpy(float)))
    if res.penalized.to_numpy().any():
        return keep, None
    return keep, res.cov.to_numpy()[np.ix_(keep, keep)]


def rows_of(res, newdata):
    """(Z, strata codes, labels, cohort) of newdata, or of the fitted rows when None."""
    cohort = res.problem.cohort
    if newdata is None:
        strata = (np.zeros(cohort.n, np.int64) if cohort.strata is None
                  else np.asarray(cohort.strata))
        return cohort.X, strata, pd.RangeIndex(cohort.n), cohort
    Z, strata = cohort.encode(newdata)
    strata = np.zeros(Z.shape[0], np.int64) if strata is None else strata
    return Z, strata, newdata.index, cohort


def hazard_and_variance(b, keep, V, Z, strata, t_lo, t_hi):
    """Cumulative hazard of each row of Z over (t_lo, t_hi] and its Tsiatis variance (NaN
    without V).  t_lo, t_hi : (m, T) arrays; rows of Z in their stratum ``strata``."""
    m, T = t_hi.shape
    lp = np.asarray(Z @ b.beta).ravel() - b.offset
    risk = np.exp(lp)
    H = np.empty((m, T))
    var = np.full((m, T), np.nan)
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        lo, hi = t_lo[rows], t_hi[rows]
        h0 = b.cumulative(b.hazard, s, hi) - b.cumulative(b.hazard, s, lo)
        H[rows] = risk[rows, None] * h0
        if V is None:
            continue
        grid, where = np.unique(np.concatenate((lo.ravel(), hi.ravel())), return_inverse=True)
        Q = b.q_sums(s, grid)[:, keep]                      # (G, k)
        QV = Q @ V
        qvq = np.einsum("gk,gk->g", QV, Q)
        zk = Z[rows][:, keep]
        zv = np.asarray(zk @ V)
        zvz = np.asarray(zk.multiply(zv).sum(axis=1)).ravel()
        zvq = zv @ Q.T                                      # (m_s, G)
        i_lo = where[:lo.size].reshape(lo.shape)
        i_hi = where[lo.size:].reshape(hi.shape)
        r_idx = np.arange(rows.size)[:, None]
        dq = zvq[r_idx, i_hi] - zvq[r_idx, i_lo]            # z' V (Q_hi - Q_lo)
        # (Q_hi - Q_lo)' V (Q_hi - Q_lo)
        dqq = qvq[i_hi] + qvq[i_lo] - 2 * np.einsum("mtk,mtk->mt", QV[i_hi], Q[i_lo])
        dv = b.cumulative(b.varhaz, s, hi) - b.cumulative(b.varhaz, s, lo)
        var[rows] = risk[rows, None] ** 2 * (dv + h0 ** 2 * zvz[:, None] - 2 * h0 * dq + dqq)
    return H, var


def beyond_follow_up(b, strata, t) -> np.ndarray:
    """True where a time lies after its stratum's last follow-up time, with a DataWarning
    (R's survfit does not extend a curve past it either)."""
    past = t > b.last[strata][:, None]
    if past.any():
        warnings.warn(f"{int(past.sum())} predicted value(s) at times after the last follow-up "
                      f"of their stratum (the largest is {b.last.max():g}) are NaN: the "
                      "baseline hazard is not estimated there. Ask for earlier times.",
                      DataWarning, stacklevel=3)
    return past


def predict(res, newdata=None, type: str = "lp", reference: str = "strata") -> pd.DataFrame:
    """fit and se (R's se.fit) of each row of ``newdata`` (default: the fitted rows).

    type : "lp" (x beta - centre), "risk" (exp(lp); its se is R's, se(lp) sqrt(risk), where the
        delta method would give risk se(lp)), "expected" (the cumulative hazard over the
        row's follow-up: newdata needs the fit's time column, and its start column for
        counting-process data; for the fitted rows of an Efron fit, as R, an event takes only
        its Efron share of the increment at its own time), "survival" (exp(-expected)), or
        "terms" (each term's part of the linear predictor, ``terms``).
    reference : the centre of "lp" and "risk", as R's: "strata" (the default: the weighted
        means within the row's stratum; for an unstratified fit R's fit$means, the weighted
        column means with 0 for a 0/1 column), "sample" (fit$means) or "zero" (no
        centring).  "expected" and "survival" do not depend on it.
    """
    if type not in TYPES:
        raise ValueError(f"type must be one of {TYPES}, got {type!r}")
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
    if type == "terms":
        return terms(res, newdata)
    b = cox_baseline(res)
    keep, V = covariance(res)
    Z, strata, index, cohort = rows_of(res, newdata)
    if type in ("lp", "risk"):
        center = _centre(b, cohort, strata, reference)[:, keep]
        fit = np.asarray(Z @ b.beta).ravel() - center @ b.beta[keep]
        se = np.full(fit.size, np.nan)
        if V is not None:                  # (z - c)' V (z - c), z sparse
            zk = Z[:, keep]
            zv = np.asarray(zk @ V)
            cv = center @ V
            quad = (np.asarray(zk.multiply(zv).sum(axis=1)).ravel()
                    - 2 * np.asarray(zk.multiply(cv).sum(axis=1)).ravel()
                    + np.einsum("mk,mk->m", cv, center))
            se = np.sqrt(np.maximum(quad, 0.0))
        if type == "risk":        # R's predict.coxph: se(lp) sqrt(risk), not risk se(lp)
            fit = np.exp(fit)
            se = np.sqrt(fit) * se
        return pd.DataFrame({"fit": fit, "se": se}, index=index)
    stop, start = _follow_up(cohort, newdata, Z.shape[0])
    past = beyond_follow_up(b, strata, stop[:, None])[:, 0]
    H, var = hazard_and_variance(b, keep, V, Z, strata, start[:, None], stop[:, None])
    fit, se = H[:, 0], np.sqrt(var[:, 0])
    if newdata is None and b.ties == "efron":
        fit = fit + _efron_own_share(b, cohort, strata, Z)
    if type == "survival":
        fit = np.exp(-fit)
        se = fit * se
    fit[past], se[past] = np.nan, np.nan
    return pd.DataFrame({"fit": fit, "se": se}, index=index)


def term_columns(res) -> dict[str, list[int]]:
    """Each term of the fit (those of its formula; else one a covariate) -> the positions of
    its coefficients in ``res.coef``."""
    names = list(res.coef.index)
    formula = getattr(res, "formula", None)
    if formula is None:
        return {name: [j] for j, name in enumerate(names)}
    at = {name: j for j, name in enumerate(names)}
    found = {term: [at[c] for c in cols if c in at] for term, cols in formula.terms.items()}
    return {term: cols for term, cols in found.items() if cols}


def column_centres(cohort) -> np.ndarray:
    """R's fit$means (survival 3.x): 0 for a 0/1 column, else its weighted mean over the
    fitted rows; the centre of each term's part of the linear predictor."""
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    return fit_means(cohort, np.asarray(cohort.X.T @ w).ravel() / w.sum())


def terms(res, newdata=None) -> pd.DataFrame:
    """Each term's part of the linear predictor, sum over its columns of beta_c (x_c - m_c)
    (m: column_centres), and its standard error, of each row of ``newdata`` (default the
    fitted rows): R's ``predict(fit, newdata, type = "terms", se.fit = TRUE)``, what R's
    termplot draws.  A spline's whole basis is one term.

    Returns a DataFrame with a column per term under "fit" and under "se" (``out["fit"]
    ["ns(age, df=3)"]``); NaN for a term with a coefficient that is not an estimate, and every
    se NaN for a penalised fit (no covariance).
    """
    cox_baseline_checked(res)
    Z, _, index, cohort = rows_of(res, newdata)
    centre = column_centres(cohort)
    fit, se = {}, {}
    for term, cols in term_columns(res).items():
        fit[term], se[term] = term_part(res, Z[:, cols], cols, centre)
    return pd.concat({"fit": pd.DataFrame(fit, index=index),
                      "se": pd.DataFrame(se, index=index)}, axis=1)


def term_part(res, Z, cols, centre) -> tuple[np.ndarray, np.ndarray]:
    """(fit, se) of one term in each row of Z, the design's columns of its coefficients
    ``cols``: sum over them of beta_c (z_c - centre_c) (centre: column_centres of the fitted
    cohort), and its standard error from the fit's covariance (NaN for a penalised fit)."""
    d = Z.toarray() - centre[cols]
    fit = d @ res.coef.to_numpy(float)[cols]
    if res.penalized.to_numpy().any():
        return fit, np.full(fit.size, np.nan)
    V = res.cov.to_numpy()[np.ix_(cols, cols)]
    return fit, np.sqrt(np.maximum(np.einsum("mk,kl,ml->m", d, V, d), 0.0))


def predict_survival(res, newdata, times=None, conf_type: str = "log",
                     level: float = 0.95) -> pd.DataFrame:
    """Predicted survival curves of the rows of ``newdata`` with pointwise confidence limits,
    as R's ``summary(survfit(fit, newdata), times=)``.

    times : the times to report (default: the event times of each row's stratum).  A time
        after the stratum's last follow-up gives NaN with a DataWarning.

    Returns a long table in newdata's row order: row (its index label), stratum (stratified
    fits), time, cumhaz, se_cumhaz, survival, std_err (of the survival, as R prints it),
    lower, upper.
    """
    if conf_type not in CONF_TYPES:
        raise ValueError(f"conf_type must be one of {CONF_TYPES}, got {conf_type!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    b = cox_baseline(res)
    keep, V = covariance(res)
    Z, strata, index, _ = rows_of(res, newdata)
    asked = None if times is None else checked_times(times)
    parts = []
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        t = b.times[s] if asked is None else asked
        hi = np.broadcast_to(t, (rows.size, t.size))
        lo = np.full(hi.shape, -np.inf)
        H, var = hazard_and_variance(b, keep, V, Z[rows], np.full(rows.size, s), lo, hi)
        past = beyond_follow_up(b, np.full(rows.size, s), hi)
        H[past], var[past] = np.nan, np.nan
        part = pd.DataFrame({"position": np.repeat(rows, t.size),
                             "row": np.repeat(np.asarray(index)[rows], t.size),
                             "time": np.tile(t, rows.size), "cumhaz": H.ravel(),
                             "se_cumhaz": np.sqrt(var).ravel()})
        if b.labels is not None:
            part.insert(1, "stratum", b.labels[s])
        parts.append(part)
    out = (pd.concat(parts, ignore_index=True).sort_values("position", kind="stable")
           .drop(columns="position").reset_index(drop=True))        # newdata's row order
    lower, upper = confidence_limits(out["cumhaz"].to_numpy(), out["se_cumhaz"].to_numpy(),
                                     conf_type, level)
    survival = np.exp(-out["cumhaz"].to_numpy())
    return out.assign(survival=survival, std_err=survival * out["se_cumhaz"], lower=lower,
                      upper=upper)


def confidence_limits(H, se, conf_type: str, level: float):
    """(lower, upper) limits of S = exp(-H) from se(H), by R's conf.type (see the module)."""
    z = stats.norm.ppf(0.5 + level / 2)
    S = np.exp(-H)
    with np.errstate(divide="ignore", invalid="ignore"):
        if conf_type == "log":
            return np.exp(-(H + z * se)), np.minimum(np.exp(-(H - z * se)), 1.0)
        if conf_type == "log-log":
            spread = np.where(H > 0, np.exp(z * se / H), np.nan)
            return np.exp(-H * spread), np.exp(-H / spread)
    return np.clip(S - z * S * se, 0.0, 1.0), np.clip(S + z * S * se, 0.0, 1.0)


def _efron_own_share(b, cohort, strata, Z) -> np.ndarray:
    """For the fitted rows under Efron's ties: an event takes only its share of the hazard
    increment at its own time (death_hazard, not hazard), as R's predict.coxph(type=
    "expected") = y - the martingale residual.  The change to each row's expected count."""
    out = np.zeros(cohort.n)
    event = np.asarray(cohort.event) > 0
    if cohort.weights is not None:
        event &= np.asarray(cohort.weights) > 0
    risk = np.exp(np.asarray(Z @ b.beta).ravel() - b.offset)
    stop = np.asarray(cohort.time, float)
    for s in np.unique(strata[event]):
        rows = np.flatnonzero(event & (strata == s))
        k = np.searchsorted(b.times[s], stop[rows])
        out[rows] = risk[rows] * (b.death_hazard[s][k] - b.hazard[s][k])
    return out


def _centre(b, cohort, strata, reference) -> np.ndarray:
    """(m, p) centres of the rows for ``reference``."""
    m = strata.size
    if reference == "zero":
        return np.zeros((m, b.center.size))
    if reference == "sample" or cohort.strata is None:
        return np.broadcast_to(b.center, (m, b.center.size))
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    codes = np.asarray(cohort.strata)
    means = np.vstack([np.asarray(cohort.X[codes == k].T @ w[codes == k]).ravel()
                       / w[codes == k].sum() for k in range(cohort.n_strata)])
    return means[strata]


def _follow_up(cohort, newdata, m):
    """(stop, start) of each row: the fitted rows', or newdata's time (and start) columns."""
    if newdata is None:
        start = (np.full(cohort.n, -np.inf) if cohort.start is None
                 else np.asarray(cohort.start, float))
        return np.asarray(cohort.time, float), start
    names = [cohort.source.get("time") or "time"]
    if cohort.start is not None:
        names.append(cohort.source.get("start") or "start")
    missing = [c for c in names if c not in newdata.columns]
    if missing:
        raise ValueError(f"type='expected' and 'survival' need each row's follow-up: newdata "
                         f"lacks the column(s) {missing}. Add them, or use predict_survival "
                         "for curves at chosen times.")
    stop = newdata[names[0]].to_numpy(float)
    start = newdata[names[1]].to_numpy(float) if len(names) > 1 else np.full(m, -np.inf)
    bad = ~np.isfinite(stop) | ~(np.isfinite(start) | (start == -np.inf))
    if bad.any():
        raise ValueError(f"newdata's follow-up columns {names} hold missing or infinite values "
                         f"at rows {list(np.asarray(newdata.index)[bad][:5])}; fill them in.")
    return stop, start


def cohort_survival(res, cohort, times) -> np.ndarray:
    """(n, T) predicted survival of the rows of an engine.Cohort with the fit's covariates (a
    held-out one, or the fitted one) at ``times``; a time after a row's stratum's last
    follow-up raises."""
    b = cox_baseline(res)
    if list(cohort.names) != list(res.coef.index):
        raise ValueError("the cohort's covariates differ from the fit's: build it with the same "
                         "covariates (and levels) as the fitted cohort.")
    fitted = res.problem.cohort
    if fitted.strata is None:
        strata = np.zeros(cohort.n, np.int64)
    else:
        if cohort.strata is None or not set(cohort.strata_labels) <= set(fitted.strata_labels):
            raise ValueError(f"the cohort's strata must be among the fitted ones "
                             f"{fitted.strata_labels}.")
        code = {label: k for k, label in enumerate(fitted.strata_labels)}
        strata = np.array([code[label] for label in cohort.strata_labels])[cohort.strata]
    times = np.atleast_1d(np.asarray(times, float))
    late = times[None, :] > b.last[np.unique(strata), None]
    if late.any():
        raise ValueError(f"times after the last follow-up of a stratum ({b.last.min():g}): "
                         "the predicted survival is not estimated there. Ask for earlier times.")
    H0 = np.vstack([b.cumulative(b.hazard, s, times) for s in range(len(b.times))])
    risk = np.exp(np.asarray(cohort.X @ b.beta).ravel() - b.offset)
    return np.exp(-risk[:, None] * H0[strata])
