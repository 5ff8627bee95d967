"""The baseline hazard of a Cox fit: Breslow's or Efron's estimator per stratum, with entry
times and case weights, as R survival's ``basehaz`` and ``survfit.coxph`` (its ``agsurv``)
compute it.

At each event time t_k of a stratum, over the rows at risk {start_i < t_k <= stop_i} with
r_i = w_i exp((x_i - c) beta): S0 = sum r_i, d events (a count), D their summed weights and E
their summed r_i.  The hazard increments and their variance terms are

    Breslow  dH = D / S0,                           dV = D / S0^2
    Efron    dH = D/d sum_j 1 / (S0 - j/d E),       dV = D/d sum_j 1 / (S0 - j/d E)^2

(j = 0..d-1).  c is the centring: R's coxph centres at fit$means, the weighted column means
with 0 for a 0/1 column (survival 3.x), so ``basehaz(fit)`` (centered=TRUE) is the hazard of a
subject at those and ``centered=FALSE`` the hazard at x = 0, H exp(-c' beta); a predicted curve
does not depend on c.  The variance
of a predicted cumulative hazard H(t; z) = exp((z - c) beta) H0(t) is Tsiatis' (1981), as
agsurv computes it:

    Var = exp(2 (z - c) beta) [ sum_{t_k <= t} dV_k + q' V q ],   q = z H0(t) - Q(t),
    Q(t) = sum_{t_k <= t} dV_k S1_k - e_k S1d_k,   e_k = D/d sum_j (j/d) / (S0 - j/d E)^2

(Breslow: e = 0), V the coefficients' covariance, S1 = sum r_i x_i over the risk set and S1d
over the events at t_k.  Everything reuses the fit's sorted layout (modeldata: stratum, then
stop descending): the hazard costs O(N), and Q at T times one sparse product X' M, M holding
each row's weights in the gap between the times where its stop (or entry) falls.
A fit on the GPU backend (float64) does both on the device, where its sorted rows already are:
the increments by one segmented scan over Efron's terms (cox_gpu_risk_set.hazard_increments)
and Q's products by the CSC kernel, so only the per-time pieces come back to the host.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from ..core.arguments import check_flag
from .row_flags import GROUP_END

# the per-stratum pieces of a Baseline, in the order both builders compute them
PIECES = ("times", "hazard", "varhaz", "tie_term", "death_hazard", "n_risk", "n_event")


@dataclass
class Baseline:
    """The baseline hazard of one Cox fit, per stratum (lists indexed by stratum code).

    Attributes
    ----------
    ties : "breslow" | "efron"
    center : (p,) the centre c, R's fit$means (weighted column means, 0 for a 0/1 column)
    beta : (p,) the coefficients, NaN (aliased) as 0
    labels : stratum labels, or None
    times, hazard, varhaz, tie_term, n_risk, n_event : per stratum, at its event times
        (ascending): t_k, dH_k, dV_k, e_k, the summed weights at risk and of the events
    death_hazard : per stratum, the increment an event at t_k itself takes in Efron's
        likelihood, D/d sum_j (1 - j/d) / (S0 - j/d E) (Breslow: dH_k); R's fitted
        "expected" (y minus the martingale residual) uses it
    last : (K,) the largest follow-up time of each stratum (curves end there)
    md, X : the fit's sorted layout (modeldata.ModelData) and the cohort's covariates;
    r, event, stop, start : w exp((x - c) beta), the event flag, stop and entry time (None
        without entry times) of each sorted row (for Q); device arrays when ``device`` holds
        the rows
    device : the GPU backend whose sorted rows Q is summed over, or None (the host's X)
    """

    ties: str
    center: np.ndarray
    beta: np.ndarray
    labels: list | None
    times: list
    hazard: list
    varhaz: list
    tie_term: list
    death_hazard: list
    n_risk: list
    n_event: list
    last: np.ndarray
    md: object
    X: object
    r: np.ndarray
    event: np.ndarray
    stop: np.ndarray
    start: np.ndarray | None
    device: object = None

    @property
    def offset(self) -> float:
        """c' beta: exp(x beta - offset) is the relative risk against the centre."""
        return float(self.center @ self.beta)

    def cumulative(self, values, stratum: int, t) -> np.ndarray:
        """sum over event times <= t of ``values`` (a list of per-stratum increments)."""
        cum = np.concatenate(([0.0], np.cumsum(values[stratum])))
        return cum[np.searchsorted(self.times[stratum], np.asarray(t, float), side="right")]

    def q_sums(self, stratum: int, t) -> np.ndarray:
        """Q(t) of the module for each time in ``t``: shape (len(t), p)."""
        if self.device is not None:
            return self._q_sums_on_device(stratum, t)
        md, s = self.md, stratum
        a, b = md.strata_bounds[s], md.strata_bounds[s + 1]
        t = np.atleast_1d(np.asarray(t, float))
        order = np.argsort(t, kind="stable")
        ts = t[order]
        G = ts.size
        cum = np.concatenate(([0.0], np.cumsum(self.varhaz[s])))

        def upto(x):
            return cum[np.searchsorted(self.times[s], x, side="right")]

        # Q(t) = sum_i r_i x_i (C(min(stop_i, t)) - C(start_i))_+ minus the Efron terms, as
        # sums over the rows whose stop (or entry) lies in each gap between the sorted times:
        #   A = sum_{stop <= t} r C(stop) x,  B = sum_{stop > t} r x,  E = sum_{events, stop <=
        #   t} r e x, and with entry times L = sum_{start >= t} r x, S = sum_{start < t} r
        #   C(start) x:  Q(t) = A + C(t) (B - L) - S - E
        # (a row entered at or after t is in B and in L; C(t) - C(start) <= 0 there).  One
        # sparse product X' M, M holding each row's weight in its gap's column of each sum.
        stop, r, rows = self.stop[a:b], self.r[a:b], md.order[a:b]
        gap = np.searchsorted(ts, stop, side="left")          # stop <= ts[g] iff g >= gap
        parts = [(rows, gap, r * upto(stop)), (rows, gap, r)]        # A, B
        ev = np.flatnonzero(self.event[a:b]) if self.ties == "efron" else np.zeros(0, np.int64)
        k = np.searchsorted(self.times[s], stop[ev])
        parts.append((rows[ev], gap[ev], r[ev] * self.tie_term[s][k]))           # E
        if self.start is not None:
            start = self.start[a:b]
            entered = np.searchsorted(ts, start, side="right")   # start < ts[g] iff g >= it
            parts += [(rows, entered, r), (rows, entered, r * upto(start))]     # L, S
        M = sparse.csc_matrix(
            (np.concatenate([v for _, _, v in parts]),
             (np.concatenate([who for who, _, _ in parts]),
              np.concatenate([at + m * (G + 1) for m, (_, at, _) in enumerate(parts)]))),
            shape=(md.n, len(parts) * (G + 1)))
        sums = np.asarray((self.X.T @ M).todense()).T.reshape(len(parts), G + 1, -1)
        up = np.cumsum(sums, axis=1)[:, :G]                     # gaps 0..g: the rows <= ts[g]
        down = np.cumsum(sums[:, ::-1], axis=1)[:, ::-1][:, 1:]  # gaps g+1..G: the rows > ts[g]
        Q = up[0] + upto(ts)[:, None] * down[1] - up[2]
        if self.start is not None:
            Q -= upto(ts)[:, None] * down[3] + up[4]
        out = np.empty_like(Q)
        out[order] = Q
        return out

    def _q_sums_on_device(self, stratum: int, t) -> np.ndarray:
        """``q_sums`` over the device's sorted rows: the module's v (rows x times) built there
        and X' v by the backend's CSC kernel."""
        md, s = self.md, stratum
        a, b = md.strata_bounds[s], md.strata_bounds[s + 1]
        xp = self.device.cp
        t = xp.asarray(np.atleast_1d(np.asarray(t, float)))
        stop = self.stop[a:b, None]
        r = self.r[a:b, None]
        cum = xp.asarray(np.concatenate(([0.0], np.cumsum(self.varhaz[s]))))
        times = xp.asarray(self.times[s])

        def upto(x):
            return cum[xp.searchsorted(times, x, side="right")]

        # C(min(stop, t)) = min(C(stop), C(t)): C is non-decreasing
        inside = xp.minimum(upto(stop), upto(t)[None, :])
        if self.start is not None:
            inside = xp.maximum(inside - upto(self.start[a:b, None]), 0.0)
        v = r * inside
        if self.ties == "efron":
            ev = xp.flatnonzero(self.event[a:b])
            k = xp.searchsorted(times, stop[ev, 0])
            tie = xp.asarray(self.tie_term[s])
            v[ev] -= (r[ev, 0] * tie[k])[:, None] * (stop[ev] <= t[None, :])
        full = xp.zeros((v.shape[1], md.n))
        full[:, a:b] = v.T
        return self.device.column_products(full)

    def table(self, centered: bool = True) -> pd.DataFrame:
        """stratum, time, n_risk, n_event, hazard, cumhaz, survival; one row per event time.
        ``centered=False``: at x = 0 (the hazards times exp(-c' beta), as R's basehaz)."""
        check_flag("centered", centered)
        scale = 1.0 if centered else np.exp(-self.offset)
        parts = []
        for s in range(len(self.times)):
            h = self.hazard[s] * scale
            parts.append(pd.DataFrame({
                "stratum": self.labels[s] if self.labels is not None else None,
                "time": self.times[s], "n_risk": self.n_risk[s], "n_event": self.n_event[s],
                "hazard": h, "cumhaz": np.cumsum(h), "survival": np.exp(-np.cumsum(h))}))
        out = pd.concat(parts, ignore_index=True)
        return out if self.labels is not None else out.drop(columns="stratum")


def baseline(cohort, md, beta, ties: str, weights=None, backend=None) -> Baseline:
    """The Breslow (``ties="breslow"``) or Efron baseline hazard of ``cohort`` at ``beta``
    (NaN read as 0), over its sorted layout ``md`` (modeldata.ModelData of the fit), with the
    cohort's case weights or ``weights`` (caller's row order: a bootstrap replicate's).
    ``backend``: the fit's; the GPU's in float64 computes on the device (see the module),
    with these weights set."""
    beta = np.nan_to_num(np.asarray(beta, float), nan=0.0)
    X = cohort.X
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    w = w if weights is None else np.asarray(weights, float)
    w_sorted = w[md.order]              # the cohort's weights (a resampling may have set others)
    if hasattr(backend, "hazard_increments") and backend.dtype == np.float64:
        return _on_device(cohort, md, beta, ties, w_sorted, backend)
    center = fit_means(cohort, np.asarray(X.T @ w).ravel() / w.sum())
    eta = np.asarray(X @ beta).ravel()
    r = w_sorted * np.exp(eta[md.order] - center @ beta)
    event = (np.asarray(cohort.event)[md.order] > 0) & (w_sorted > 0)
    ends_all = (md.flags & GROUP_END) > 0
    out = {key: [] for key in PIECES}
    last = np.empty(md.strata_bounds.size - 1)
    for s in range(last.size):
        a, b = md.strata_bounds[s], md.strata_bounds[s + 1]
        rs, ws, ev = r[a:b], w_sorted[a:b], event[a:b]
        last[s] = md.stop[a]
        ends = np.flatnonzero(ends_all[a:b])
        starts = np.concatenate(([0], ends[:-1] + 1))
        s0, at_risk = np.cumsum(rs)[ends], np.cumsum(ws)[ends]
        t = md.stop[a:b][ends]
        if md.start is not None:        # leave out the rows not yet entered: start >= t
            so = md.start_order[a:b]
            entered = np.searchsorted(-md.start[so], -t, side="right")
            s0 = s0 - np.concatenate(([0.0], np.cumsum(r[so])))[entered]
            at_risk = at_risk - np.concatenate(([0.0], np.cumsum(w_sorted[so])))[entered]
        d = np.add.reduceat(ev.astype(np.int64), starts)
        keep = np.flatnonzero(d > 0)[::-1]            # event times, ascending
        d, s0, at_risk, t = d[keep], s0[keep], at_risk[keep], t[keep]
        D = np.add.reduceat(np.where(ev, ws, 0.0), starts)[keep]
        E = np.add.reduceat(np.where(ev, rs, 0.0), starts)[keep]
        if ties == "efron":
            group = np.repeat(np.arange(d.size), d)
            j = np.arange(group.size) - np.repeat(np.cumsum(d) - d, d)
            frac = j / d[group]
            inv = 1.0 / (s0[group] - frac * E[group])
            dh = D * np.bincount(group, inv, d.size) / d
            dv = D * np.bincount(group, inv ** 2, d.size) / d
            e = D * np.bincount(group, frac * inv ** 2, d.size) / d
            own = D * np.bincount(group, (1.0 - frac) * inv, d.size) / d
        else:
            dh, dv, e = D / s0, D / s0 ** 2, np.zeros(d.size)
            own = dh
        for key, value in zip(PIECES, (t, dh, dv, e, own, at_risk, D)):
            out[key].append(value)
    return Baseline(ties=ties, center=center, beta=beta, labels=cohort.strata_labels,
                    last=last, md=md, X=X, r=r, event=event, stop=md.stop, start=md.start,
                    **out)


def fit_means(cohort, means) -> np.ndarray:
    """R's fit$means (survival 3.x) from the weighted column ``means``: 0 for a 0/1 column."""
    return np.where(np.asarray(cohort.binary), 0.0, means)


def _on_device(cohort, md, beta, ties, w_sorted, backend) -> Baseline:
    """``baseline`` by the GPU backend's scans over the sorted rows it holds: the centre
    X^T w, then the increments of every tie group with events in one pass, split by stratum
    here (each stratum's groups run from its latest time: reversed)."""
    backend.set_weights(w_sorted)
    center = fit_means(cohort, backend.column_products(w_sorted[None])[0] / w_sorted.sum())
    ends, inc, r, event = backend.hazard_increments(beta, float(center @ beta))
    dh, dv, e, own, D, at_risk = inc
    bounds = md.strata_bounds
    cut = np.searchsorted(ends, bounds)
    out = {key: [] for key in PIECES}
    for s in range(bounds.size - 1):
        g = np.arange(cut[s], cut[s + 1])[::-1]
        for key, value in zip(PIECES, (md.stop[ends[g]], dh[g], dv[g], e[g], own[g],
                                       at_risk[g], D[g])):
            out[key].append(value)
    cp = backend.cp
    return Baseline(ties=ties, center=center, beta=beta, labels=cohort.strata_labels,
                    last=md.stop[bounds[:-1]].astype(float), md=md, X=cohort.X, r=r,
                    event=event, stop=cp.asarray(md.stop),
                    start=None if md.start is None else cp.asarray(md.start), device=backend,
                    **out)
