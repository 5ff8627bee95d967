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
    free = [n for n in names if np.isfinite(res.cov.at[n, n])]
    if len(free) < len(names):
        fixed = [n for n in names if n not in free]
        raise ValueError(f"{fixed} are penalised or infinite in this fit, so they have no "
                         "variance and no Wald test. Refit with them unpenalized.")
    b = res.coef[names].to_numpy()
    V = res.cov.loc[names, names].to_numpy()
    statistic = float(b @ np.linalg.solve(V, b))
    return pd.Series({"statistic": statistic, "df": len(names),
                      "p": float(stats.chi2.sf(statistic, len(names)))}, name=label)


def wald_test(res, term=None, variable=None, names=None) -> pd.Series:
    """statistic, df, p of the joint Wald test that all the chosen coefficients are zero.

    Give one of:

    term : a term of the fit's formula ("ns(bmi, df=4)", "sex:treat", "C(site)"): its
        columns; for a fit without a formula, a covariate name
    variable : a column the formula reads ("bmi"): every term reading it, interactions
        included (rms's anova "factor + higher order factors")
    names : coefficient names, e.g. a spline's non-linear columns (the test of linearity)
    """
    given = [arg for arg in (term, variable, names) if arg is not None]
    if len(given) != 1:
        raise ValueError("give one of term= (a term of the formula), variable= (a column it "
                         "reads) or names=[...] (coefficient names).")
    if names is not None:
        return _statistic(res, names, ", ".join(names))
    if res.formula is None:
        if variable is not None:
            raise ValueError("variable= reads the terms of a formula; this fit has none. Pass "
                             "term= or names= with covariate names.")
        return _statistic(res, [term], term)
    if term is not None:
        return _statistic(res, res.formula.columns_of(term), term)
    return _statistic(res, res.formula.columns_reading(variable), variable)


def interaction_test(res, a, b) -> pd.Series:
    """statistic, df, p of the joint Wald test of every interaction of variables ``a`` and
    ``b`` in the fit's formula: does the effect of ``a`` differ across ``b`` (the heterogeneity
    p-value beside a subgroup forest)?"""
    if res.formula is None:
        raise ValueError("interaction_test reads the terms of a formula; build the cohort with "
                         f"Cohort.from_frame(..., formula='{a} * {b} + ...') and refit.")
    return _statistic(res, res.formula.interaction_columns(a, b), f"{a} x {b}")
