"""The likelihood-ratio test of two nested fits of the same data: is the larger model (more
covariates, or a covariate split at cut points into a time-varying effect) better than the
smaller one?  LR = 2 (l_big - l_small) against chi-square on the difference in free
coefficients, as R's anova(coxph_small, coxph_big)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..data.episodes import interval_names


def lr_test(small, big) -> pd.Series:
    """statistic, df, p of ``big`` against ``small`` (two engine.fit results)."""
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
    missing = [name for name in small.coef.index
               if not set(interval_names(name, cuts[name]) if name in cuts else [name])
               <= set(big.coef.index)]
    if missing:
        raise ValueError(f"the smaller fit's covariates {missing} are not in the larger fit: the "
                         "fits are not nested.")
    df = int(np.isfinite(big.coef).sum() - np.isfinite(small.coef).sum())
    if df < 1:
        raise ValueError("the larger fit has no more free coefficients than the smaller one.")
    statistic = 2.0 * (big.loglik - small.loglik)
    return pd.Series({"statistic": statistic, "df": df,
                      "p": float(stats.chi2.sf(max(statistic, 0.0), df))})
