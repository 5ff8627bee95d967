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
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats import rankdata

from .cohort import Cohort
from .fit import loglik
from .risk_set import risk_set_sums

TRANSFORMS = ("km", "identity", "rank", "log")


def ph_test(res, cohort: Cohort, transform: str = "km") -> pd.DataFrame:
    """R's cox.zph table for a Cox fit of ``cohort``: chisq, df, p by term and "GLOBAL".

    Parameters
    ----------
    res : engine.FitResult of ``engine.fit(cohort, model="cox", ...)`` (unpenalised, without
        cut points); its ties (Breslow or Efron) and strata are used
    cohort : the engine.Cohort that was fitted (a FitResult keeps no data)
    transform : "km" (R's default) | "identity" | "rank" | "log"
    """
    z = _Zph(res, cohort, transform)
    p = len(z.names)
    rows, chisq, df = [], [], []
    for term, columns in z.terms.items():
        kk = np.concatenate([np.arange(p), p + np.asarray(columns)])
        u = np.concatenate([np.zeros(p), z.u[columns]])
        rows.append(term)
        chisq.append(float(u @ np.linalg.solve(z.imat[np.ix_(kk, kk)], u)))
        df.append(len(columns))
    u = np.concatenate([np.zeros(p), z.u])
    rows.append("GLOBAL")
    chisq.append(float(u @ np.linalg.solve(z.imat, u)))
    df.append(p)
    out = pd.DataFrame({"chisq": chisq, "df": df}, index=pd.Index(rows, name="term"))
    out["p"] = stats.chi2.sf(out["chisq"], out["df"])
    return out


def scaled_schoenfeld(res, cohort: Cohort, transform: str = "km") -> pd.DataFrame:
    """Scaled Schoenfeld residuals, one row per event (time order within strata): row (its
    position in the cohort), time, g (the transformed time), stratum (when stratified) and one
    column per coefficient, whose smooth against g estimates beta_j(t) (R's cox.zph(...)$y
    with terms=FALSE)."""
    z = _Zph(res, cohort, transform)
    p = len(z.names)
    vmean = z.imat[:p, :p] / np.where(z.weight == 0, 1.0, z.weight)
    scaled = np.full_like(z.schoenfeld, np.nan)
    for s in range(z.used.shape[0]):
        k = np.flatnonzero(z.used[s] > 0)
        rows = z.event_strata == s
        if k.size and rows.any():
            scaled[np.ix_(rows, k)] = np.linalg.solve(vmean[np.ix_(k, k)],
                                                      z.schoenfeld[np.ix_(rows, k)].T).T
    out = pd.DataFrame(scaled + z.beta, columns=z.names)
    out.insert(0, "g", z.g_events)
    out.insert(0, "time", z.event_times)
    out.insert(0, "row", z.event_rows)
    if cohort.strata is not None:
        out.insert(3, "stratum", np.asarray(cohort.strata_labels, dtype=object)[z.event_strata])
    return out


class _Zph:
    """Score, information and Schoenfeld residuals of the model extended by x * g(t)."""

    def __init__(self, res, cohort, transform):
        if not isinstance(cohort, Cohort):
            raise TypeError("ph_test needs the engine.Cohort that was fitted as its second "
                            f"argument, got {type(cohort).__name__}.")
        if transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
        spec = res.spec
        if spec.get("model") != "cox" or spec.get("cut_points") or spec.get("penalty") != "none":
            raise ValueError("ph_test checks unpenalised Cox fits without cut points (R's "
                             f"cox.zph); this fit is model={spec.get('model')!r}, penalty="
                             f"{spec.get('penalty')!r}, cut_points={spec.get('cut_points')!r}.")
        if list(res.coef.index) != list(cohort.names) or res.n != cohort.n:
            raise ValueError("the cohort is not the one fitted: its covariates or rows differ "
                             "from the fit's. Pass the cohort given to engine.fit.")
        coef = res.coef.to_numpy(float)
        if np.isinf(coef).any():
            raise ValueError(f"coefficients {list(res.coef.index[np.isinf(coef)])} diverge; "
                             "the PH test needs a finite fit (remove or merge those columns).")
        ties = spec["ties"]
        fitted = loglik(cohort, np.nan_to_num(coef), ties=ties)
        if not np.isclose(fitted, res.loglik, rtol=1e-6, atol=1e-8):
            raise ValueError(f"the cohort's log-likelihood at the fitted coefficients is "
                             f"{fitted:.6f}, the fit's {res.loglik:.6f}: pass the cohort given "
                             "to engine.fit.")
        keep = np.flatnonzero(np.isfinite(coef))         # aliased (NaN) columns left out
        self.names = [cohort.names[j] for j in keep]
        self.beta = coef[keep]
        self.terms = _terms(self.names, cohort.reference_levels)
        X = cohort.X[:, keep].toarray()
        X = X - X.mean(axis=0)
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
            x, dead = X[rows], event[rows]
            varies = (x != x[:1]).any(axis=0)
            self.used[s] = np.where(varies, dead.sum(), 0)
            t_event = np.unique(stop[rows][dead])
            if t_event.size == 0:
                continue
            rr = r[rows]
            moments = np.column_stack([rr, rr[:, None] * x,
                                       (rr[:, None, None] * x[:, :, None] * x[:, None, :])
                                       .reshape(len(rows), p * p)])
            at_risk = np.column_stack([risk_set_sums(start[rows], stop[rows], moments[:, q],
                                                     t_event) for q in range(moments.shape[1])])
            slot = np.searchsorted(t_event, stop[rows][dead])
            died = np.zeros((t_event.size, moments.shape[1]))
            np.add.at(died, slot, moments[dead])
            m = np.bincount(slot, minlength=t_event.size).astype(float)
            dead_w = np.bincount(slot, w[rows][dead], minlength=t_event.size)
            g_t = np.zeros(t_event.size)
            g_t[slot] = g[rows][dead]
            info, mean_x = self._time_terms(at_risk, died, m, dead_w, p, efron)
            self.u += (g[rows][dead] * w[rows][dead]) @ x[dead] - (g_t * dead_w) @ mean_x
            for a, b, power in ((0, 0, 0), (0, 1, 1), (1, 1, 2)):
                block = np.tensordot(g_t ** power, info, axes=1)
                self.imat[a * p:(a + 1) * p, b * p:(b + 1) * p] = \
                    self.imat[a * p:(a + 1) * p, b * p:(b + 1) * p] + block
            order = np.argsort(stop[rows][dead], kind="stable")
            schoenfeld.append((x[dead] - mean_x[slot])[order])
            times.append(stop[rows][dead][order])
            gs.append(g[rows][dead][order])
            layer.append(np.full(dead.sum(), s))
            positions.append(rows[dead][order])
        self.imat[p:, :p] = self.imat[:p, p:].T
        self.schoenfeld = np.vstack(schoenfeld)
        self.event_times, self.g_events = np.concatenate(times), np.concatenate(gs)
        self.event_strata = np.concatenate(layer)
        self.event_rows = np.concatenate(positions)
        self.weight = sum(np.minimum.outer(used, used) for used in self.used)

    @staticmethod
    def _time_terms(at_risk, died, m, dead_w, p, efron):
        """Per event time: information I_t (T, p, p) times the dead weight, and the mean of x
        over the risk set (Efron: the mean of the means over the tied deaths), (T, p)."""
        T = at_risk.shape[0]
        info = np.zeros((T, p, p))
        mean_x = np.zeros((T, p))
        steps = int(m.max()) if efron else 1
        for k in range(1, steps + 1):
            active = m >= k
            frac = np.where(efron, k / m, 1.0)[active]            # Efron: k/m of the deaths
            sums = at_risk[active] - (1 - frac)[:, None] * died[active]
            s0, s1 = sums[:, 0], sums[:, 1:1 + p]
            s2 = sums[:, 1 + p:].reshape(-1, p, p)
            xbar = s1 / s0[:, None]
            share = (dead_w[active] / (m[active] if efron else 1.0))[:, None, None]
            info[active] += share * (s2 / s0[:, None, None] - xbar[:, :, None] * xbar[:, None, :])
            mean_x[active] += xbar / (m[active][:, None] if efron else 1.0)
        return info, mean_x


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
    d = np.bincount(np.searchsorted(times, stop[event]), minlength=times.size)
    survival = np.cumprod(1.0 - d / n)
    before = np.searchsorted(times, stop, side="left")  # event times strictly before t
    return 1.0 - np.concatenate(([1.0], survival))[before]


def _terms(names, reference_levels):
    """Term -> column positions: a text covariate's indicators ``col[level]`` form one term."""
    terms = {}
    for j, name in enumerate(names):
        term = next((column for column in reference_levels
                     if name.startswith(f"{column}[") and name.endswith("]")), name)
        terms.setdefault(term, []).append(j)
    return terms
