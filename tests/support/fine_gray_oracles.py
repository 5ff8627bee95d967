"""Brute-force reference definitions of the Fine-Gray model (the test oracle).

Written from Fine & Gray (1999) and cmprsk::crr's definitions, independently of engine/: plain
numpy, loops over distinct times, risk sets by boolean masks.  O(N^2) on purpose.

Conventions:

* ``code``: 0 censored, k the cause of interest, any other positive code a competing event.
* G is the Kaplan-Meier of the censoring distribution (censored rows are its events, every row
  at risk until its time, case weights counted), evaluated at left limits:
  G(t-) = prod over censoring times u < t of (1 - dC(u)/Y(u)); ``censoring_group`` says
  whose rows make each G (one G for all by default).
* Risk set at a cause-k time t (within the row's stratum): rows with y >= t, weight 1, and
  competing rows with y < t, weight G(t-)/G(y-); times the case weight and exp(eta).
* Breslow ties: l = sum over events of w_i eta_i - sum_t W_t log S0(t), W_t the summed weight
  of the cause-k events at t.
* Sandwich (Fine & Gray 1999 sec. 3, as crr): V = I^-1 (sum_i u_i u_i^T) I^-1, u_i = eta_i +
  psi_i, with case weights multiplying each subject's terms.
"""
from __future__ import annotations

import numpy as np


def _setup(time, code, X, weights, strata, censoring_group):
    time = np.asarray(time, float)
    code = np.asarray(code, int)
    X = np.asarray(X, float)
    if X.ndim == 1:
        X = X[:, None]
    n = time.size
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    strata = np.zeros(n, int) if strata is None else np.asarray(strata)
    cg = np.zeros(n, int) if censoring_group is None else np.asarray(censoring_group)
    return time, code, X, w, strata, cg


def censoring_km_left(time, code, weights=None, censoring_group=None):
    """G(y_i-) for each row, from its censoring group's Kaplan-Meier, by the product formula."""
    time, code, _, w, _, cg = _setup(time, code, np.zeros(len(time)), weights, None,
                                     censoring_group)
    out = np.ones(time.size)
    for i in range(time.size):
        same = cg == cg[i]
        for u in np.unique(time[same & (code == 0)]):
            if u < time[i]:
                at_risk = w[same & (time >= u)].sum()
                censored = w[same & (time == u) & (code == 0)].sum()
                out[i] *= 1.0 - censored / at_risk
    return out


def risk_weights(t, stratum, time, code, cause, weights=None, strata=None,
                 censoring_group=None):
    """crr's weight of every row in the risk set at cause-k time t of ``stratum`` (no w, no
    exp(eta)): 1 for y >= t, G(t-)/G(y-) for competing y < t, else 0; 0 outside the stratum."""
    time, code, _, w, strata, cg = _setup(time, code, np.zeros(len(time)), weights, strata,
                                          censoring_group)
    G = censoring_km_left(time, code, w, cg)
    out = np.zeros(time.size)
    for r in range(time.size):
        if strata[r] != stratum:
            continue
        if time[r] >= t:
            out[r] = 1.0
        elif code[r] > 0 and code[r] != cause:
            # G(t-) of r's censoring group: the product over its censoring times before t
            g_t = 1.0
            same = cg == cg[r]
            for u in np.unique(time[same & (code == 0)]):
                if u < t:
                    g_t *= 1.0 - (w[same & (time == u) & (code == 0)].sum()
                                  / w[same & (time >= u)].sum())
            out[r] = g_t / G[r]
    return out


def _groups(time, code, cause, strata):
    """(stratum, t) of each distinct cause-k event time per stratum."""
    ev = code == cause
    return sorted({(s, t) for s, t in zip(strata[ev], time[ev])})


def _risk(time, code, cause, w, strata, cg, eta, s, t):
    c = risk_weights(t, s, time, code, cause, w, strata, cg)
    return c * w * np.exp(eta)


def loglik(time, code, X, beta, cause=1, weights=None, strata=None, censoring_group=None):
    time, code, X, w, strata, cg = _setup(time, code, X, weights, strata, censoring_group)
    eta = X @ np.asarray(beta, float)
    ll = 0.0
    for s, t in _groups(time, code, cause, strata):
        events = (strata == s) & (time == t) & (code == cause)
        ll += np.sum(w[events] * eta[events])
        ll -= w[events].sum() * np.log(_risk(time, code, cause, w, strata, cg, eta, s, t).sum())
    return ll


def gradient(time, code, X, beta, cause=1, weights=None, strata=None, censoring_group=None):
    time, code, X, w, strata, cg = _setup(time, code, X, weights, strata, censoring_group)
    eta = X @ np.asarray(beta, float)
    g = np.zeros(X.shape[1])
    for s, t in _groups(time, code, cause, strata):
        events = (strata == s) & (time == t) & (code == cause)
        c = _risk(time, code, cause, w, strata, cg, eta, s, t)
        g += (w[events, None] * X[events]).sum(0) - w[events].sum() * (c @ X) / c.sum()
    return g


def information(time, code, X, beta, cause=1, weights=None, strata=None,
                censoring_group=None):
    time, code, X, w, strata, cg = _setup(time, code, X, weights, strata, censoring_group)
    eta = X @ np.asarray(beta, float)
    p = X.shape[1]
    info = np.zeros((p, p))
    for s, t in _groups(time, code, cause, strata):
        events = (strata == s) & (time == t) & (code == cause)
        c = _risk(time, code, cause, w, strata, cg, eta, s, t)
        m = (c @ X) / c.sum()
        info += w[events].sum() * ((X.T * c) @ X / c.sum() - np.outer(m, m))
    return info


def sandwich(time, code, X, beta, cause=1, weights=None, strata=None, censoring_group=None):
    """(I, sum_i u_i u_i^T, V) by Fine & Gray's formulas, one subject and one time at a time.

    eta_i = int (x_i - xbar(t)) w_i(t) dM_i(t) with the Breslow increment dLambda(t) =
    W_t / S0(t); psi_i = int q(u)/Y(u) dM^c_i(u), M^c the censoring martingale of i's
    censoring group and q(u) = sum over competing j (same censoring group) with y_j < u and
    cause-k times t >= u in j's stratum of (x_j - xbar(t)) w_j(t) exp(eta_j) dLambda(t).
    """
    time, code, X, w, strata, cg = _setup(time, code, X, weights, strata, censoring_group)
    beta = np.asarray(beta, float)
    eta = X @ beta
    n, p = X.shape
    groups = _groups(time, code, cause, strata)
    xbar, dlam, cw = {}, {}, {}
    for s, t in groups:
        events = (strata == s) & (time == t) & (code == cause)
        cw[s, t] = risk_weights(t, s, time, code, cause, w, strata, cg)
        c = cw[s, t] * w * np.exp(eta)
        xbar[s, t] = (c @ X) / c.sum()
        dlam[s, t] = w[events].sum() / c.sum()

    u = np.zeros((n, p))
    for i in range(n):
        if code[i] == cause:
            u[i] += w[i] * (X[i] - xbar[strata[i], time[i]])
        for s, t in groups:
            if s == strata[i] and cw[s, t][i] > 0:
                u[i] -= w[i] * cw[s, t][i] * np.exp(eta[i]) * (X[i] - xbar[s, t]) * dlam[s, t]

    def q(c_group, uu):
        total = np.zeros(p)
        for j in range(n):
            if cg[j] != c_group or code[j] in (0, cause) or not time[j] < uu:
                continue
            for s, t in groups:
                if s == strata[j] and t >= uu:
                    total += ((X[j] - xbar[s, t]) * cw[s, t][j] * w[j] * np.exp(eta[j])
                              * dlam[s, t])
        return total

    for c_group in np.unique(cg):
        same = cg == c_group
        for uu in np.unique(time[same & (code == 0)]):
            Y = w[same & (time >= uu)].sum()
            dC = w[same & (time == uu) & (code == 0)].sum()
            qu = q(c_group, uu)
            for i in np.flatnonzero(same):
                if time[i] == uu and code[i] == 0:
                    u[i] += w[i] * qu / Y
                if time[i] >= uu:
                    u[i] -= w[i] * qu * dC / Y ** 2
    info = information(time, code, X, beta, cause, w, strata, cg)
    middle = u.T @ u
    inv = np.linalg.inv(info)
    return info, middle, inv @ middle @ inv
