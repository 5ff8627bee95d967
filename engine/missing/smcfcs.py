"""Substantive-model-compatible imputation (SMC-FCS) of covariates of a Cox model.

Bartlett, Seaman, White and Carpenter (Multiple imputation of covariates by fully conditional
specification: accommodating the substantive model, Statistical Methods in Medical Research
2015), as R's smcfcs does it for ``coxph``: each incomplete covariate x is drawn from
f(x | other covariates) f(T, D | x, other covariates), the second factor the Cox model itself,
so that the imputations agree with the model the data are analysed with.  With competing
causes the second factor is the product of one cause-specific Cox model per cause (R's
smcfcs "compet"): each step below sums their terms.  Chained equations with the event and
the Nelson-Aalen hazard as predictors (chained_equations.py) approximate that factor by a
linear model, and bias a large hazard ratio toward 1.

One chain per imputed data set: missing values start as random observed ones; then, for
``iterations`` cycles, each incomplete column in turn:
1. its covariate model (a linear model with normal errors, or a logistic one for a 0/1
   column) is fitted on every row given the other covariates, and its parameters drawn from
   their approximate posterior (sigma^2 by RSS / chi^2_{n-p}, then the coefficients from
   their normal, as smcfcs's modPostDraw);
2. the Cox model is fitted to the current data, its coefficients drawn from their normal
   approximation, and the Breslow baseline cumulative hazard H0 taken at each row's time
   (R's basehaz of the fit, as smcfcs does; with strata, each row's stratum's);
3. a 0/1 column is drawn from its exact conditional, P(x = 1) proportional to
   p1 exp(eta_1)^D exp(-H0 exp(eta_1)); a continuous one by rejection from its target
   f(x) proportional to N(x; mu, sigma^2) exp(beta x)^D exp(-u(x)), u = H0 exp(eta), up to
   ``rejection_limit`` tries a row (the last draw is kept and counted).  The proposal is
   N(m, sigma^2) at the target's mode m (log f is concave: Newton's method), and
   f / N(m, sigma^2) is proportional to exp(a x - u(x)) with a = beta u(m), whose maximum is
   at m: a draw is kept with probability exp(a (x - m) - u(x) + u(m)).  R's smcfcs proposes
   from N(mu, sigma^2), keeping a draw with exp(-u) (censored) or u exp(1 - u) (event): the
   same family at m = mu, whose bound is loose where the target sits far from mu (an early
   event: one try in 1 / (e H0) kept; a late censoring).  On tests/engine/missing/
   test_smcfcs.py's simulation that route left 10-120 of 130,000 draws unaccepted after
   1,000 tries; at the mode none.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import special

from ..core.errors import CohortError
from ..data.cohort import Cohort
from ..regression.fit import fit


def binary(values: np.ndarray) -> bool:
    """A 0/1 column (its observed values): imputed by logistic regression."""
    seen = np.unique(values[np.isfinite(values)])
    return seen.size <= 2 and np.isin(seen, (0.0, 1.0)).all()


def event_probability(p1, eta0, eta1, H0, died):
    """P(x = 1 | T, D, rest) of a 0/1 covariate: the covariate model's p1 times the Cox
    likelihood of (T, D) at x = 1, over the sum with x = 0 (linear predictors eta0, eta1).
    With K causes eta0, eta1, H0 and ``died`` (each row's cause) are K x rows, the
    likelihood the product of the cause-specific ones."""
    eta0, eta1, H0, died = (np.atleast_2d(a) for a in (eta0, eta1, H0, died))
    log1 = np.log(p1) + (died * eta1 - H0 * np.exp(eta1)).sum(axis=0)
    log0 = np.log1p(-p1) + (died * eta0 - H0 * np.exp(eta0)).sum(axis=0)
    return special.expit(log1 - log0)


def mode(mean, sigma, beta, eta_rest, H0, died, steps: int = 50):
    """The mode of the target f (module docstring, step 3) of each row: the root of
    -(x - mu) / sigma^2 + D beta - beta u(x), by Newton's method from mu + D beta sigma^2
    (log f is concave, its second derivative -1 / sigma^2 - beta^2 u(x)), steps at most
    3 sigma long.  With K causes beta is (K,), eta_rest, H0 and ``died`` K x rows, and the
    cause terms are summed."""
    beta = np.atleast_1d(beta)[:, None]
    eta_rest, H0, died = (np.atleast_2d(a) for a in (eta_rest, H0, died))
    pull = (died * beta).sum(axis=0)
    x = mean + pull * sigma ** 2
    for _ in range(steps):
        u = H0 * np.exp(eta_rest + beta * x)
        step = (-(x - mean) / sigma ** 2 + pull - (beta * u).sum(axis=0)) \
            / (1.0 / sigma ** 2 + (beta ** 2 * u).sum(axis=0))
        # within 3 sigma a step: a full step from where u is flat may land where exp(eta)
        # overflows; log f is concave, so the shortened steps still reach the mode
        step = np.clip(step, -3.0 * sigma, 3.0 * sigma)
        x = x + step
        if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(x))):
            break
    return x


def acceptance(x, m, beta, eta_rest, H0):
    """The probability of keeping a draw x of N(m, sigma^2), m the target's mode:
    exp(a (x - m) - u(x) + u(m)), a = beta u(m); at most 1, 1 at x = m.  With K causes
    (beta (K,), eta_rest and H0 K x rows) a and u are sums over the causes."""
    beta = np.atleast_1d(beta)[:, None]
    eta_rest, H0 = np.atleast_2d(eta_rest), np.atleast_2d(H0)
    um = H0 * np.exp(eta_rest + beta * m)
    ux = H0 * np.exp(eta_rest + beta * x)
    log = ((beta * um) * (x - m) - ux + um).sum(axis=0)
    return np.exp(np.minimum(log, 0.0))


def chains(X: pd.DataFrame, time, event, columns, m, iterations, rejection_limit, ties, rng,
           step=None, strata=None):
    """(draws, rejected): the m chains' final values of each column's missing entries
    ({column: m x missing}), and how many rows of each column kept an unaccepted draw.
    ``step()`` after each cycle (m x iterations of them); ``strata``: a DataFrame of the
    Cox model's strata columns (a baseline hazard each), or None."""
    values = X.to_numpy(float)
    missing = {c: np.isnan(values[:, X.columns.get_loc(c)]) for c in columns}
    kind = {c: "logistic" if binary(values[:, X.columns.get_loc(c)]) else "linear"
            for c in columns}
    draws = {c: [] for c in columns}
    rejected = dict.fromkeys(columns, 0)
    for _ in range(m):
        Z = values.copy()
        for c in columns:            # start at random observed values
            j, rows = X.columns.get_loc(c), missing[c]
            Z[rows, j] = rng.choice(values[~rows, j], rows.sum())
        for _ in range(iterations):
            for c in columns:
                j = X.columns.get_loc(c)
                rejected[c] += _update(Z, j, missing[c], kind[c], X.columns, time, event,
                                       rejection_limit, ties, rng, strata)
            if step is not None:
                step()
        for c in columns:
            draws[c].append(Z[missing[c], X.columns.get_loc(c)].copy())
    return {c: np.vstack(draws[c]) for c in columns}, rejected


def _update(Z, j, rows, kind, names, time, event, rejection_limit, ties, rng, strata) -> int:
    """Draw column j's missing rows once (steps 1-3); the rows that kept a rejected draw."""
    others = np.delete(Z, j, axis=1)
    design = np.column_stack([np.ones(len(Z)), others])
    causes = np.unique(event[event > 0])
    draws = [_cox_draw(Z, names, time, event == k, ties, rng, strata) for k in causes]
    B = np.vstack([beta for beta, _ in draws])                    # K x p
    H0 = np.vstack([h for _, h in draws])[:, rows]                # K x rows
    eta_rest = np.delete(B, j, axis=1) @ others[rows].T           # K x rows
    died = event[rows][None, :] == causes[:, None]                # each row's cause
    if kind == "logistic":
        gamma = logistic_draw(design, Z[:, j], rng)
        p1 = special.expit(design[rows] @ gamma)
        p = event_probability(p1, eta_rest, eta_rest + B[:, j, None], H0, died)
        Z[rows, j] = (rng.uniform(size=p.size) < p).astype(float)
        return 0
    gamma, sigma = linear_draw(design, Z[:, j], rng)
    m = mode(design[rows] @ gamma, sigma, B[:, j], eta_rest, H0, died)
    todo = np.arange(rows.sum())
    out = np.empty(todo.size)
    for _ in range(rejection_limit):
        x = m[todo] + sigma * rng.standard_normal(todo.size)
        keep = rng.uniform(size=todo.size) < acceptance(x, m[todo], B[:, j],
                                                        eta_rest[:, todo], H0[:, todo])
        out[todo] = x
        todo = todo[~keep]
        if not todo.size:
            break
    Z[rows, j] = out
    return int(todo.size)


def _cox_draw(Z, names, time, died, ties, rng, strata=None):
    """The Cox model of the events ``died`` (one cause's; the others censored) on the current
    data: coefficients drawn from N(beta_hat, V) and the Breslow cumulative baseline hazard
    (not centred) of the fit at each row's time, of its stratum's baseline when the model
    has ``strata``."""
    frame = pd.DataFrame(Z, columns=names).assign(_time=time, _event=died.astype(int))
    by = None
    if strata is not None:
        frame = pd.concat([frame, strata.set_axis(frame.index)], axis=1)
        by = list(strata.columns)
    cohort = Cohort.from_frame(frame, "_time", "_event", list(names), strata=by)
    res = fit(cohort, ties=ties)
    if not (res.converged and np.isfinite(res.cov.to_numpy()).all()):
        raise CohortError("the Cox model of the imputation did not converge on the current "
                          "data (a covariate that separates events, or collinear columns): "
                          "check the model's covariates on the complete cases first")
    beta = rng.multivariate_normal(res.coef.to_numpy(), res.cov.to_numpy())
    base = res.baseline_hazard(centered=False)
    if cohort.strata is None:
        return beta, _step_function(base, time)
    H0 = np.empty(len(time))
    for k, label in enumerate(cohort.strata_labels):
        rows = cohort.strata == k
        H0[rows] = _step_function(base[base["stratum"] == label], time[rows])
    return beta, H0


def _step_function(base, time):
    """The cumulative hazard of a baseline table at each of ``time`` (0 before its first
    event time)."""
    at = np.searchsorted(base["time"].to_numpy(), time, side="right") - 1
    return np.where(at >= 0, base["cumhaz"].to_numpy()[np.maximum(at, 0)], 0.0)


def linear_draw(design, y, rng):
    """(gamma*, sigma*) of the normal linear covariate model: sigma^2 = RSS / chi^2_{n-p},
    gamma ~ N(gamma_hat, sigma^2 (X'X)^-1)."""
    n, p = design.shape
    gamma, *_ = np.linalg.lstsq(design, y, rcond=None)
    rss = float(np.sum((y - design @ gamma) ** 2))
    sigma2 = rss / rng.chisquare(n - p)
    cov = sigma2 * np.linalg.pinv(design.T @ design)
    return rng.multivariate_normal(gamma, cov), np.sqrt(sigma2)


def logistic_draw(design, y, rng):
    """gamma* ~ N(gamma_hat, V) of the logistic covariate model (statsmodels' Logit, V its
    inverse information)."""
    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # separation: told below, by name
        model = sm.Logit(y, design).fit(method="newton", disp=0, warn_convergence=False)
    if not (model.mle_retvals["converged"] and np.isfinite(model.cov_params()).all()):
        raise CohortError("the logistic model of a 0/1 column given the other covariates "
                          "does not converge: they predict it perfectly (separation); leave "
                          "one of them out, or impute with method='mice'")
    return rng.multivariate_normal(model.params, model.cov_params())
