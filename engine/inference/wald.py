"""Joint Wald tests of a group of coefficients: all columns of one term (a spline's basis, a
factor's levels, an interaction's products), and the interaction (heterogeneity) test of a
subgroup forest.

W = b' V^-1 b against chi-square on k degrees of freedom, b the k coefficients and V their
block of the fit's covariance (inverse information; Fine-Gray's sandwich), as R's
``car::linearHypothesis`` / rms's ``anova`` (Harrell 2015, Regression Modeling Strategies,
section 9.2).  A term's "nonlinear" part (all spline columns but the first of rcs) is the usual
test of linearity.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def _statistic(res, names, label) -> pd.Series:
    names = list(dict.fromkeys(names))
    absent = [n for n in names if n not in res.coef.index]
    if absent:
        raise ValueError(f"{absent} are not coefficients of this fit (its covariates are "
                         f"{list(res.coef.index)[:20]}); name columns of the fit, or a term "
                         "of its formula.")
    free = [n for n in names if n in res.cov.index]
    if len(free) < len(names):
        fixed = [n for n in names if n not in free]
        raise ValueError(f"{fixed} are penalised or infinite in this fit, so they have no "
                         "variance and no Wald test. Refit with them unpenalized.")
    b = res.coef[names].to_numpy()
    V = res.cov.loc[names, names].to_numpy()
    statistic = float(b @ np.linalg.solve(V, b))
    return pd.Series({"statistic": statistic, "df": len(names),
                      "p": float(stats.chi2.sf(statistic, len(names)))}, name=label)


def wald_test(res, term=None, names=None) -> pd.Series:
    """statistic, df, p of the joint Wald test that all columns of ``term`` are zero.

    Parameters
    ----------
    res : FitResult
    term : a term of the fit's formula ("ns(bmi, df=4)", "sex:treat", "C(site)"), or a
        variable ("bmi": every term that reads it, interactions included); a covariate name
        for a fit without a formula
    names : list of coefficient names to test instead of ``term``
    """
    if (term is None) == (names is None):
        raise ValueError("give term= (a term or variable of the formula) or names=[...] "
                         "(coefficient names), one of the two.")
    if names is None:
        if res.formula is not None:
            names = res.formula.columns_of(term)
        else:
            names = [term]
    return _statistic(res, names, term if term is not None else ", ".join(names))


def interaction_test(res, a, b) -> pd.Series:
    """statistic, df, p of the joint Wald test of every interaction of variables ``a`` and
    ``b`` in the fit's formula: does the effect of ``a`` differ across ``b`` (the heterogeneity
    p-value beside a subgroup forest)?"""
    if res.formula is None:
        raise ValueError("interaction_test reads the terms of a formula; build the cohort with "
                         f"Cohort.from_frame(..., formula='{a} * {b} + ...') and refit.")
    return _statistic(res, res.formula.interaction_columns(a, b), f"{a} x {b}")
