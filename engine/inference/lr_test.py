"""The likelihood-ratio test of two nested fits of the same data: is the larger model (more
covariates, or a covariate split at cut points into a time-varying effect) better than the
smaller one?  LR = 2 (l_big - l_small) against chi-square on the difference in free
coefficients, as R's anova(coxph_small, coxph_big).  Poisson fits are compared without the
offset's part of their log-likelihoods (PoissonModel.offset_term), which moves with the cut of
follow-up into rows (bands, cut points) and not with beta: two fits cut differently (the
smaller's band limits among the larger's) then test as R's anova of both models fitted to the
finer survSplit rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..core.statistical_result import TestResult
from ..data.episodes import band_names, interval_names


def lr_test(small, big) -> TestResult:
    """An engine.TestResult: statistic, df, p of ``big`` against ``small`` (two engine.fit
    results); ``table`` by fit (small, big): loglik and free (finite) coefficients, as R's
    anova."""
    for res in (small, big):
        if res.penalized.any():
            raise ValueError("the likelihood-ratio test compares unpenalised fits; refit with "
                             "penalty=None.")
    s, b = small.spec, big.spec
    if (small.n, small.n_events) != (big.n, big.n_events) or s["model"] != b["model"] \
            or s["ties"] != b["ties"] or s.get("strata") != b.get("strata"):
        raise ValueError("the two fits are not of the same subjects, model, ties and strata "
                         f"(n {small.n} vs {big.n}, events {small.n_events} vs {big.n_events});"
                         " a likelihood-ratio test compares nested fits of one data set.")
    cuts = b.get("cut_points") or {}
    shift = _offset_shift(small, big) if b["model"] == "poisson" else 0.0
    rates = set(band_names(s.get("bands") or []))   # nested in the larger's finer bands
    missing = [name for name in small.coef.index if name not in rates
               and not set(interval_names(name, cuts[name]) if name in cuts else [name])
               <= set(big.coef.index)]
    if missing:
        raise ValueError(f"the smaller fit's covariates {missing} are not in the larger fit: the "
                         "fits are not nested.")
    free = [int(np.isfinite(fit.coef).sum()) for fit in (small, big)]
    df = free[1] - free[0]
    if df < 1:
        raise ValueError("the larger fit has no more free coefficients than the smaller one.")
    statistic = 2.0 * (big.loglik - small.loglik) - 2.0 * shift
    table = pd.DataFrame({"loglik": [small.loglik, big.loglik], "coefficients": free},
                         index=pd.Index(["small", "big"], name="fit"))
    return TestResult(statistic=float(statistic), df=int(df),
                      p=float(stats.chi2.sf(max(statistic, 0.0), df)), table=table,
                      spec={"test": "likelihood ratio", "model": b["model"], "ties": b["ties"]})


def _offset_shift(small, big) -> float:
    """The difference of two Poisson fits' offset terms (0 for rows cut alike; a ValueError
    unless the smaller's bands are among the larger's: else neither nests)."""
    inner, outer = set(small.spec.get("bands") or []), set(big.spec.get("bands") or [])
    if not inner <= outer:
        raise ValueError(f"the smaller fit's follow-up bands {sorted(inner)} are not among the "
                         f"larger fit's {sorted(outer)}: the fits are not nested.")
    if small.problem is None or big.problem is None:
        raise ValueError("Poisson fits are compared by their rows' person-time: both need "
                         "their data (problem); refit with engine.fit.")
    return big.problem.model.offset_term() - small.problem.model.offset_term()
