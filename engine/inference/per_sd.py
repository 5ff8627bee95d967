"""engine.per_sd: coefficients per standard deviation of their covariate.

Coefficients of covariates in different units (a nucleus' area in square microns, its
smoothness as a ratio) are not comparable; per SD they are, and that is the scale on which
engine.sample's horseshoe shrinks (it standardises by the same population SD).
"""
import numpy as np
import pandas as pd


def per_sd(cohort, coefficients):
    """``coefficients`` (a Series, or a DataFrame whose every column is on the coefficients'
    scale: means, SDs, quantiles) indexed by covariate name, times each covariate's SD in
    ``cohort`` (ddof=0); rows that are not covariates (the intercept) are dropped."""
    sd = pd.Series(np.asarray(cohort.X.toarray().std(axis=0)).ravel(), index=cohort.names)
    rows = [name for name in coefficients.index if name in sd.index]
    scale = sd.reindex(rows)
    if isinstance(coefficients, pd.DataFrame):
        return coefficients.loc[rows].mul(scale, axis=0)
    return coefficients.loc[rows] * scale
