"""Brute-force reference definitions of the Cox partial likelihood (the test oracle).

Written straight from the textbook definitions, independently of engine/: plain numpy,
one loop over the distinct event times of each stratum, the risk set taken by a boolean
mask (time >= t). O(N^2) and slow on purpose; readability is the point.

Conventions (R coxph semantics):

* ``time``: follow-up time; ``event``: 1 = event, 0 = censored.
* Risk set at an event time t inside a stratum: the rows of that stratum with time >= t.
* ``weights``: case weights w_i (default 1).
* ``strata``: any 1-d array of labels; each stratum has its own baseline hazard, so the
  log partial likelihood is the sum of the per-stratum ones.
* Breslow ties, for a tie group D(t) of events at t, with risk set R(t):

      l_t = sum_{i in D} w_i eta_i - W_D * log( sum_{j in R} w_j exp(eta_j) ),
      W_D = sum_{i in D} w_i.

* Efron ties (R's rule with case weights): with d = |D|, wbar = W_D / d,
  S0 = sum_R w exp(eta), E = sum_D w exp(eta):

      l_t = sum_{i in D} w_i eta_i - wbar * sum_{k=0}^{d-1} log( S0 - (k/d) E ).

  Without weights (all w = 1) this is Efron's (1977) approximation.

The gradient and Hessian below are the exact derivatives of these expressions.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "breslow_loglik",
    "breslow_gradient",
    "breslow_hessian",
    "efron_loglik",
    "efron_gradient",
    "efron_hessian",
    "cox_loglik",
    "cox_gradient",
    "cox_hessian",
    "lambda_max_l1",
    "kkt_violations",
    "assert_kkt",
]


def _prepare(time, event, X, beta, weights, strata):
    time = np.asarray(time, dtype=float).ravel()
    event = np.asarray(event).ravel().astype(bool)
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    n, p = X.shape
    beta = np.asarray(beta, dtype=float).ravel()
    assert beta.shape == (p,), (beta.shape, p)
    assert time.shape == (n,) and event.shape == (n,)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float).ravel()
    assert w.shape == (n,)
    s = np.zeros(n, dtype=int) if strata is None else np.unique(np.asarray(strata), return_inverse=True)[1].ravel()
    eta = X @ beta
    return time, event, X, w, s, eta


def _tie_groups(time, event, s):
    """Yield (risk-set mask, tie-group mask) for every distinct event time in every stratum."""
    for k in np.unique(s):
        in_k = s == k
        for t in np.unique(time[in_k & event]):
            risk = in_k & (time >= t)
            dead = in_k & event & (time == t)
            yield risk, dead


def _cox(time, event, X, beta, weights, strata, ties, order):
    """Log partial likelihood (order 0), gradient (1) or Hessian (2), by brute force."""
    if ties not in ("breslow", "efron"):
        raise ValueError(ties)
    time, event, X, w, s, eta = _prepare(time, event, X, beta, weights, strata)
    p = X.shape[1]
    shift = eta.max() if eta.size else 0.0  # exp(eta - shift) never overflows; cancels exactly
    r = w * np.exp(eta - shift)              # w_j exp(eta_j), shifted
    ll, grad, hess = 0.0, np.zeros(p), np.zeros((p, p))
    for risk, dead in _tie_groups(time, event, s):
        xr, rr = X[risk], r[risk]
        xd, rd, wd = X[dead], r[dead], w[dead]
        S0, S1, S2 = rr.sum(), rr @ xr, (xr * rr[:, None]).T @ xr
        WD = wd.sum()
        ll += wd @ eta[dead]
        grad += wd @ xd
        if ties == "breslow" or dead.sum() == 1:
            # Efron with a single event is Breslow
            fracs = np.array([0.0])
            mult = WD
        else:
            d = int(dead.sum())
            fracs = np.arange(d) / d
            mult = WD / d
        E0, E1, E2 = rd.sum(), rd @ xd, (xd * rd[:, None]).T @ xd
        for c in fracs:
            den = S0 - c * E0
            num1 = S1 - c * E1
            num2 = S2 - c * E2
            ll -= mult * (np.log(den) + shift)
            grad -= mult * num1 / den
            hess -= mult * (num2 / den - np.outer(num1, num1) / den**2)
    return (ll, grad, hess)[order]


def breslow_loglik(time, event, X, beta, weights=None, strata=None):
    return float(_cox(time, event, X, beta, weights, strata, "breslow", 0))


def breslow_gradient(time, event, X, beta, weights=None, strata=None):
    return _cox(time, event, X, beta, weights, strata, "breslow", 1)


def breslow_hessian(time, event, X, beta, weights=None, strata=None):
    return _cox(time, event, X, beta, weights, strata, "breslow", 2)


def efron_loglik(time, event, X, beta, weights=None, strata=None):
    return float(_cox(time, event, X, beta, weights, strata, "efron", 0))


def efron_gradient(time, event, X, beta, weights=None, strata=None):
    return _cox(time, event, X, beta, weights, strata, "efron", 1)


def efron_hessian(time, event, X, beta, weights=None, strata=None):
    return _cox(time, event, X, beta, weights, strata, "efron", 2)


def cox_loglik(time, event, X, beta, weights=None, strata=None, ties="breslow"):
    return float(_cox(time, event, X, beta, weights, strata, ties, 0))


def cox_gradient(time, event, X, beta, weights=None, strata=None, ties="breslow"):
    return _cox(time, event, X, beta, weights, strata, ties, 1)


def cox_hessian(time, event, X, beta, weights=None, strata=None, ties="breslow"):
    return _cox(time, event, X, beta, weights, strata, ties, 2)


# ---------------------------------------------------------------------------------------
# Penalised fits: optimality (KKT) conditions
# ---------------------------------------------------------------------------------------

def lambda_max_l1(grad_at_zero, penalized):
    """Smallest L1 lam for which beta = 0 (on the penalised coordinates) is optimal.

    ``grad_at_zero``: gradient of l at the point where penalised coefs are 0 and unpenalised
    ones are at their (restricted) optimum; ``penalized``: boolean mask.
    """
    g = np.asarray(grad_at_zero, dtype=float)
    return float(np.max(np.abs(g[np.asarray(penalized, dtype=bool)])))


def kkt_violations(grad, beta, lam, kind, penalized=None, rel=1e-6):
    """Indices where (beta, grad of l at beta) breaks the KKT conditions of
        minimise -l(beta) + lam * sum_j |beta_j|        (kind="l1")
        minimise -l(beta) + lam/2 * sum_j beta_j^2      (kind="l2")
    over the penalised coordinates, to relative tolerance ``rel``:

    * L1, beta_j == 0:  |g_j| <= lam * (1 + rel)
    * L1, beta_j != 0:  |g_j - lam * sign(beta_j)| <= rel * max(1, lam)
    * L2:               |g_j - lam * beta_j| <= rel * max(1, lam)
    * unpenalised:      |g_j| <= rel * max(1, lam)

    Returns a list of (j, g_j, beta_j, why) for every violation (empty = optimal).
    """
    g = np.asarray(grad, dtype=float).ravel()
    b = np.asarray(beta, dtype=float).ravel()
    pen = np.ones(b.size, bool) if penalized is None else np.asarray(penalized, dtype=bool)
    tol = rel * max(1.0, lam)
    bad = []
    for j in range(b.size):
        if not pen[j]:
            if abs(g[j]) > tol:
                bad.append((j, g[j], b[j], "unpenalised: |g| > tol"))
        elif kind == "l1":
            if b[j] == 0.0:
                if abs(g[j]) > lam * (1 + rel):
                    bad.append((j, g[j], b[j], "zero coef: |g| > lam"))
            elif abs(g[j] - lam * np.sign(b[j])) > tol:
                bad.append((j, g[j], b[j], "nonzero coef: g != lam*sign(beta)"))
        elif kind == "l2":
            if abs(g[j] - lam * b[j]) > tol:
                bad.append((j, g[j], b[j], "g != lam*beta"))
        else:
            raise ValueError(kind)
    return bad


def assert_kkt(grad, beta, lam, kind, penalized=None, rel=1e-6, names=None):
    bad = kkt_violations(grad, beta, lam, kind, penalized, rel)
    if bad:
        lines = [
            f"  {names[j] if names is not None else j}: g={gj!r} beta={bj!r} lam={lam!r} ({why})"
            for j, gj, bj, why in bad
        ]
        raise AssertionError(f"KKT ({kind}) violated at {len(bad)} coordinate(s):\n" + "\n".join(lines))
