"""The proportional-hazards check of a Cox fit: R survival's cox.zph score test and scaled
Schoenfeld residuals (Grambsch and Therneau 1994, "Proportional hazards tests and diagnostics
based on weighted residuals", Biometrika 81:515-526).

The fit is extended by one term x_j g(t) per covariate, g a transform of time centred over the
events; the test of each term (and of all together, "GLOBAL") is the score test at (beta_hat, 0):

    U_j = sum_events g(t_i) w_i (x_ij - xbar_j(t_i)),   chisq = U' I^-1 U,

I the information of (beta, gamma), 2p x 2p, its blocks sum_t g(t)^a I_t (a = 0, 1, 2), I_t the
Breslow or Efron information at event time t; U's beta part is 0 at the MLE (R's zph1.c and
zph2.c).  With the default transform "km", g(t) = 1 - S(t-), S the pooled, unweighted
Kaplan-Meier.  A text covariate's indicator columns form one term (R's terms=TRUE).  Scaled
Schoenfeld residuals are beta + d V^-1 r_i, r_i the Schoenfeld residual at event i, V = I_beta
and d the number of events (per stratum where covariates are constant in some strata).

A fit with cut points (a coefficient that changes at given times) is checked on its (start,
stop] episodes as R's survSplit lays them out, each interval's coefficient a term of its own,
as R's cox.zph of a coxph fitted to survSplit data: the Kaplan-Meier of the episodes is the
subjects' (each subject's episodes follow one another), and the interval strata of the
"strata" route, which drop the entry times, are not used.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats import rankdata

from ..data.cohort import Cohort
from ..data.episodes import split_at_cut_points
from ..core.sorted_search import searched
from ..core.statistical_result import TestResult
from ..regression.fit import loglik
from ..data.risk_set import RiskSets, event_time_terms, exposures, risk_set_sums

TRANSFORMS = ("km", "identity", "rank", "log")


def ph_test(res, cohort: Cohort | None = None, transform: str = "km") -> TestResult:
    """R's cox.zph test for a Cox fit of ``cohort``: an engine.TestResult whose statistic, df
    and p are the GLOBAL test's and whose ``table`` is R's: chisq, df, p by term and "GLOBAL".

    Parameters
    ----------
    res : engine.FitResult of ``engine.fit(cohort, model="cox", ...)`` (unpenalised, with or
        without cut points); its ties (Breslow or Efron) and strata are used
    cohort : the engine.Cohort that was fitted; default the one the FitResult keeps
    transform : "km" (R's default) | "identity" | "rank" | "log"
    """
    return Zph(*cox_fit_rows(res, cohort), transform).test(res.spec.get("ties"))


def scaled_schoenfeld(res, cohort: Cohort | None = None, transform: str = "km") -> pd.DataFrame:
    """Scaled Schoenfeld residuals, one row per event (time order within strata): row (its
    position in the cohort), time, g (the transformed time), stratum (when stratified) and one
    column per coefficient, whose smooth against g estimates beta_j(t) (R's cox.zph(...)$y
    with terms=FALSE).  A fit with cut points: one row per event of its episodes, ``row`` the
    episode's position among them."""
    return Zph(*cox_fit_rows(res, cohort), transform).scaled_schoenfeld()


def schoenfeld(res, cohort: Cohort | None = None) -> pd.DataFrame:
    """Schoenfeld residuals, one row per event (time order within strata): each event's
    covariates minus their risk-weighted mean over its risk set (Efron: over the tied deaths'
    shares), R's residuals(fit, type = "schoenfeld"); columns as scaled_schoenfeld's (g the
    Kaplan-Meier transform of the time).  Their sum over the events is the score, zero at the
    estimate of an unweighted fit."""
    return Zph(*cox_fit_rows(res, cohort), "km").schoenfeld_residuals()


def information(res, cohort=None) -> pd.DataFrame:
    """The observed information -d2 l / d beta2 of a Cox fit at its estimate (Breslow or
    Efron, strata, weights, entry times), covariate by covariate; its inverse is R's
    coxph ``var``.  The same risk-set moments as the PH test's beta block."""
    cohort, keep, beta, ties = cox_fit_rows(res, cohort)
    return information_at(cohort, beta, ties, keep)


def information_at(cohort, beta, ties="breslow", columns=None) -> pd.DataFrame:
    """The observed information of the Cox partial likelihood of ``cohort`` at any ``beta``
    (one value per column in ``columns``, default all), e.g. at 0 for the score test."""
    keep = np.arange(cohort.p) if columns is None else np.asarray(columns)
    return Zph(cohort, keep, np.asarray(beta, dtype=float), ties, "identity").information()


def cox_fit_rows(res, cohort=None):
    """The rows a diagnostic of the Cox fit ``res`` runs on and the fit checked against them:
    (rows, the columns with a finite estimate, their coefficients, ties).  The rows are the
    cohort fitted or, for a fit with cut points, its (start, stop] episodes split anew as R's
    survSplit (the same partial likelihood whatever route the fit took, with the entry times
    of every episode); ``cohort`` is then the caller's, before the cut points."""
    cuts = res.spec.get("cut_points")
    if not cuts:
        cohort = fitted_cohort(res, cohort)
        return (cohort, *check_cox_fit(res, cohort))
    if cohort is None:
        cohort = getattr(getattr(res, "problem", None), "subjects", None)
    if cohort is None:
        raise TypeError("this FitResult keeps no data: pass the engine.Cohort that was fitted.")
    if not isinstance(cohort, Cohort):
        raise TypeError("this check needs the engine.Cohort that was fitted as its second "
                        f"argument, got {type(cohort).__name__}.")
    if not set(cuts) <= set(cohort.names):
        raise ValueError(f"the fit has cut points for {sorted(cuts)}, which are not all "
                         "covariates of this cohort: pass the cohort given to engine.fit "
                         "(before the cut points), not its episodes.")
    episodes = split_at_cut_points(cohort, cuts, "counting")
    return (episodes, *check_cox_fit(res, episodes, episodes=True))


def fitted_cohort(res, cohort=None):
    """``cohort`` if given, else the cohort the FitResult keeps (``res.problem.cohort``)."""
    if cohort is not None:
        return cohort
    problem = getattr(res, "problem", None)
    if problem is None:
        raise TypeError("this FitResult keeps no data: pass the engine.Cohort that was fitted.")
    return problem.cohort


def check_cox_fit(res, cohort, episodes: bool = False):
    """Check that ``res`` is an unpenalised Cox fit of ``cohort`` (same covariates and rows,
    the same log-likelihood at its coefficients); return the columns with a finite estimate
    (aliased NaN ones left out), their coefficients and the ties method.  ``episodes``: a fit
    with cut points is checked on the episodes it was fitted on (``cohort`` split at them)."""
    if not isinstance(cohort, Cohort):
        raise TypeError("this check needs the engine.Cohort that was fitted as its second "
                        f"argument, got {type(cohort).__name__}.")
    spec = res.spec
    cut = bool(spec.get("cut_points")) and not episodes
    if spec.get("model") != "cox" or cut or spec.get("penalty") != "none":
        raise ValueError("residuals, ph_test, information and concordance take unpenalised "
                         "Cox fits (with cut points: checked on their episodes); this fit is "
                         f"model={spec.get('model')!r}, "
                         f"penalty={spec.get('penalty')!r}, "
                         f"cut_points={spec.get('cut_points')!r}.")
    if list(res.coef.index) != list(cohort.names) or (res.n != cohort.n and not episodes):
        raise ValueError("the cohort is not the one fitted: its covariates or rows differ "
                         "from the fit's. Pass the cohort given to engine.fit.")
    coef = res.coef.to_numpy(float)
    if np.isinf(coef).any():
        raise ValueError(f"coefficients {list(res.coef.index[np.isinf(coef)])} diverge; "
                         "a finite fit is needed (remove or merge those columns).")
    ties = spec["ties"]
    # the fit's own cohort needs no proof (the check builds the model's data anew: 10^6 x 100
    # dense covariates, 1.2 GB and 1.7 s before each diagnostic)
    own = getattr(getattr(res, "problem", None), "cohort", None) is cohort
    fitted = res.loglik if own else loglik(cohort, np.nan_to_num(coef), ties=ties)
    if not np.isclose(fitted, res.loglik, rtol=1e-6, atol=1e-8):
        raise ValueError(f"the cohort's log-likelihood at the fitted coefficients is "
                         f"{fitted:.6f}, the fit's {res.loglik:.6f}: pass the cohort given "
                         "to engine.fit.")
    keep = np.flatnonzero(np.isfinite(coef))     # aliased (NaN) columns left out
    return keep, coef[keep], ties


class Zph:
    """Score, information and Schoenfeld residuals of the model extended by x * g(t), from
    which the test, the scaled residuals and the information are read (R's cox.zph object:
    one pass over the rows serves them all: 3.4-4.1 s at 10^6 rows x 21 covariates, Intel Xeon).

    Parameters: the rows, the columns with an estimate, their coefficients and the ties, as
    cox_fit_rows returns them, and the transform of time."""

    def __init__(self, cohort, keep, beta, ties, transform):
        if transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
        self.cohort, self.transform = cohort, transform
        self.beta = beta
        self.names = [cohort.names[j] for j in keep]
        self.terms = _terms(self.names, cohort.reference_levels,
                            getattr(cohort, "formula", None))
        X = np.asfortranarray(cohort.X[:, keep].toarray())     # contiguous columns
        X -= X.mean(axis=0)
        eta = X @ self.beta
        eta -= eta.mean()
        time = np.asarray(cohort.time)
        start = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
        event = np.asarray(cohort.event) > 0
        w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights)
        strata = np.zeros(cohort.n, np.int64) if cohort.strata is None else cohort.strata
        g = _transform(transform, start, time, event)
        g = g - g[event].mean()
        self._accumulate(X, eta, start, time, event, w, strata, g, ties == "efron")

    def test(self, ties) -> TestResult:
        """ph_test's TestResult: the score test of each term and of all (GLOBAL)."""
        p = len(self.names)
        rows, chisq, df = [], [], []
        for term, columns in self.terms.items():
            kk = np.concatenate([np.arange(p), p + np.asarray(columns)])
            u = np.concatenate([np.zeros(p), self.u[columns]])
            rows.append(term)
            chisq.append(float(u @ np.linalg.solve(self.imat[np.ix_(kk, kk)], u)))
            df.append(len(columns))
        u = np.concatenate([np.zeros(p), self.u])
        rows.append("GLOBAL")
        chisq.append(float(u @ np.linalg.solve(self.imat, u)))
        df.append(p)
        out = pd.DataFrame({"chisq": chisq, "df": df}, index=pd.Index(rows, name="term"))
        out["p"] = stats.chi2.sf(out["chisq"], out["df"])
        whole = out.loc["GLOBAL"]
        return TestResult(statistic=float(whole["chisq"]), df=int(whole["df"]),
                          p=float(whole["p"]), table=out,
                          spec={"test": "proportional hazards (Grambsch-Therneau, R's cox.zph)",
                                "transform": self.transform, "ties": ties})

    def schoenfeld_residuals(self) -> pd.DataFrame:
        """schoenfeld's table."""
        return self._per_event(self.schoenfeld)

    def scaled_schoenfeld(self) -> pd.DataFrame:
        """scaled_schoenfeld's table."""
        p = len(self.names)
        vmean = self.imat[:p, :p] / np.where(self.weight == 0, 1.0, self.weight)
        scaled = np.full_like(self.schoenfeld, np.nan)
        for s in range(self.used.shape[0]):
            k = np.flatnonzero(self.used[s] > 0)
            rows = self.event_strata == s
            if k.size and rows.any():
                scaled[np.ix_(rows, k)] = np.linalg.solve(vmean[np.ix_(k, k)],
                                                          self.schoenfeld[np.ix_(rows, k)].T).T
        return self._per_event(scaled + self.beta)

    def _per_event(self, values) -> pd.DataFrame:
        """row, time, g, (stratum) and ``values`` (events x p) by coefficient."""
        out = pd.DataFrame(values, columns=self.names)
        out.insert(0, "g", self.g_events)
        out.insert(0, "time", self.event_times)
        out.insert(0, "row", self.event_rows)
        if self.cohort.strata is not None:
            out.insert(3, "stratum", np.asarray(self.cohort.strata_labels,
                                                dtype=object)[self.event_strata])
        return out

    def information(self) -> pd.DataFrame:
        """The observed information at beta, covariate by covariate (imat's beta block)."""
        p = len(self.names)
        return pd.DataFrame(self.imat[:p, :p], index=self.names, columns=self.names)

    def _accumulate(self, X, eta, start, stop, event, w, strata, g, efron):
        n, p = X.shape
        self.u = np.zeros(p)
        self.imat = np.zeros((2 * p, 2 * p))
        n_strata = int(strata.max()) + 1
        self.used = np.zeros((n_strata, p))
        schoenfeld, times, gs, layer, positions = [], [], [], [], []
        r = w * np.exp(eta)
        for s in range(n_strata):
            rows = np.flatnonzero(strata == s)
            # in stop order: the risk-set sums of every column then read their rows in turn
            # (RiskSets), and the deaths come in time order
            rows = rows[np.argsort(stop[rows], kind="stable")]
            x, dead = X[rows], event[rows]
            varies = (x != x[:1]).any(axis=0)
            self.used[s] = np.where(varies, dead.sum(), 0)
            t_event = np.unique(stop[rows][dead])
            if t_event.size == 0:
                continue
            risk = RiskSets(start[rows], stop[rows], t_event)
            spans = risk.spans(start[rows], stop[rows])    # event times <= start, <= stop
            slot = spans[1][dead] - 1                       # a death's own time: the last
            rr = r[rows]
            when, share, frac, s0, xbar = event_time_terms(risk.at_event_times(slot, dead), rr,
                                                           x, slot, t_event.size, efron)
            dead_w = np.bincount(slot, w[rows][dead], minlength=t_event.size)
            g_t = np.zeros(t_event.size)
            g_t[slot] = g[rows][dead]
            # Efron: the mean of the means (the terms of a time follow one another)
            mean_x = np.add.reduceat(share[:, None] * xbar, np.flatnonzero(
                np.diff(when, prepend=-1)), axis=0)
            self.u += (g[rows][dead] * w[rows][dead]) @ x[dead] - (g_t * dead_w) @ mean_x
            blocks = _information_blocks(x, rr, xbar, g_t, dead_w, when, share, frac, s0,
                                         spans, slot, dead)
            for (i, j), block in zip(((0, 0), (0, p), (p, p)), blocks):
                self.imat[i:i + p, j:j + p] += block
            schoenfeld.append(x[dead] - mean_x[slot])
            times.append(stop[rows][dead])
            gs.append(g[rows][dead])
            layer.append(np.full(dead.sum(), s))
            positions.append(rows[dead])
        self.imat[p:, :p] = self.imat[:p, p:].T
        self.schoenfeld = np.vstack(schoenfeld)
        self.event_times, self.g_events = np.concatenate(times), np.concatenate(gs)
        self.event_strata = np.concatenate(layer)
        self.event_rows = np.concatenate(positions)
        self.weight = sum(np.minimum.outer(used, used) for used in self.used)


def _information_blocks(x, rr, xbar, g_t, dead_w, when, share, frac, s0, spans, slot, dead):
    """The stratum's sum_t g(t)^a I_t for a = 0, 1, 2, I_t = dead_w share (S2_t / s0 -
    xbar xbar') summed over the event terms at t (Efron: S2_t less 1 - k/m of the deaths').
    The S2 part is one weighted Gram matrix x' diag(rr q) x per power, q_i the sum of
    c = g^a dead_w share / s0 over the terms row i is at risk for (a dying row's own at k/m):
    three BLAS products instead of a risk-set sum per pair of columns (at 10^6 rows x 21
    covariates the PH test took 15.9 s with those, 5.1 s with these)."""
    deaths = np.flatnonzero(dead)
    out = []
    for power in range(3):
        weight = g_t[when] ** power * dead_w[when] * share
        q = exposures(weight / s0, when, frac, spans, slot, deaths, g_t.size)
        block = x.T @ (x * (rr * q)[:, None]) - xbar.T @ (xbar * weight[:, None])
        out.append(np.triu(block) + np.triu(block, 1).T)
    return out


def _transform(transform, start, stop, event):
    """g(t) for every row: R's cox.zph transforms of the stop time."""
    if transform == "identity":
        return stop.copy()
    if transform == "log":
        return np.log(stop)
    if transform == "rank":
        return rankdata(stop)
    times = np.unique(stop[event])                     # pooled, unweighted Kaplan-Meier
    n = risk_set_sums(start, stop, np.ones(len(stop)), times)
    before = searched(times, stop, side="left")           # event times strictly before t
    d = np.bincount(before[event], minlength=times.size)  # (an event's time is times[before])
    survival = np.cumprod(1.0 - d / n)
    return 1.0 - np.concatenate(([1.0], survival))[before]


def _terms(names, reference_levels, formula=None):
    """Term -> column positions, as R's cox.zph(terms = TRUE): a text covariate's indicators
    ``col[level]`` form one term, and so do a formula term's columns (a spline's basis, a
    factor's levels, an interaction)."""
    of_term = {column: term for term, columns in (formula.terms if formula else {}).items()
               for column in columns}
    terms = {}
    for j, name in enumerate(names):
        term = of_term.get(name) or next((column for column in reference_levels
                                          if name.startswith(f"{column}[")
                                          and name.endswith("]")), name)
        terms.setdefault(term, []).append(j)
    return terms
