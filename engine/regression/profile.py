"""Profile-likelihood confidence intervals for unpenalised coefficients of a fit.

For coefficient j the profile log-likelihood is pl(b) = max over the other coefficients of
l(beta) - penalty(beta) with beta_j held at b (the penalty on the others kept as fitted).  The
interval at ``level`` is {b : 2 (pl(b_hat) - pl(b)) <= chi2_1(level)}, its ends found by
bracketing outward from the estimate in Wald-sized steps and root-finding with Brent's method
(``scipy.optimize.brentq``).  Unlike the Wald interval it follows the likelihood's asymmetry
and respects the invariance of hazard ratios; for an unpenalised fit it is R's and
statsmodels' likelihood-ratio interval.  Each profile point is a refit on the fitted model's
sorted data, warm-started from the last one, with beta_j fixed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ..core.arguments import check_level
from .priors import penalty_value

_TOL = 1e-11          # refits: the profile is differenced against the maximum
_XTOL = 1e-9
_MAX_DOUBLINGS = 40


def profile_confint(res, names=None, level: float = 0.95) -> pd.DataFrame:
    """DataFrame (lower, upper) by covariate; ``names`` default to every unpenalised finite
    coefficient."""
    check_level(level)
    if res.problem is None:
        raise ValueError("this FitResult holds no problem to refit; profile it after engine.fit")
    free = ~res.penalized.to_numpy() & np.isfinite(res.coef.to_numpy())
    if names is None:
        names = list(res.coef.index[free])
    names = [names] if isinstance(names, str) else list(names)
    index = {name: j for j, name in enumerate(res.coef.index)}
    for name in names:
        if name not in index:
            raise ValueError(f"{name!r} is not a covariate of this fit")
        if res.penalized.iloc[index[name]]:
            raise ValueError(f"{name!r} is penalised: a profile-likelihood interval needs an "
                             "unpenalised coefficient (list it in unpenalized= when fitting)")
        if not np.isfinite(res.coef.iloc[index[name]]):
            raise ValueError(f"{name!r} diverges (monotone likelihood): no finite interval")
    crit = stats.chi2.ppf(level, 1) / 2.0
    rows = [_interval(res, index[name], crit) for name in names]
    out = pd.DataFrame(rows, index=pd.Index(names, name="covariate"), columns=["lower", "upper"])
    res.problem.set_beta(res.beta)
    return out


def _interval(res, j, crit):
    """Both ends for coefficient j: where pl_max - pl(b) = crit."""
    problem = res.problem
    lam1, lam2 = problem.penalty_vectors(res.penalty)
    fixed = np.zeros(problem.p, bool)
    fixed[j] = True
    b_hat = res.beta
    warm = {"beta": b_hat.copy()}
    top = problem.loglik(b_hat) - penalty_value(b_hat, lam1, lam2)

    def drop(b):
        init = warm["beta"].copy()
        init[j] = b
        state = problem.solve(lam1, lam2, init, fixed, solver="auto", tol=_TOL, max_iter=1000)
        warm["beta"] = state.beta.copy()
        return top - (problem.loglik() - penalty_value(state.beta, lam1, lam2)) - crit

    se = res.se_model.iloc[j]          # the profile likelihood is model-based
    scale = problem.model.scale[j]
    step = se * np.sqrt(2.0 * crit) if np.isfinite(se) and se > 0 else 1.0 / max(scale, 1e-12)
    ends = []
    for sign in (-1.0, 1.0):
        warm["beta"] = b_hat.copy()
        near, far = b_hat[j], b_hat[j] + sign * step
        for _ in range(_MAX_DOUBLINGS):
            if drop(far) > 0:
                break
            near, far = far, 2.0 * far - b_hat[j]     # double the distance
        else:
            ends.append(sign * np.inf)    # the profile never falls far enough: unbounded
            continue
        ends.append(optimize.brentq(drop, near, far, xtol=_XTOL, rtol=1e-12))
    return ends
