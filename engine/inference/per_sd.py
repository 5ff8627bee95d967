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
    sd = pd.Series(column_sd(cohort.X), index=cohort.names)
    rows = [name for name in coefficients.index if name in sd.index]
    scale = sd.reindex(rows)
    if isinstance(coefficients, pd.DataFrame):
        return coefficients.loc[rows].mul(scale, axis=0)
    return coefficients.loc[rows] * scale


def column_sd(X) -> np.ndarray:
    """The population SD (ddof=0) of each column of the CSC matrix X from its stored values,
    two-pass (each column's mean, then the squares about it: the unstored zeros add (n - nnz)
    mean^2): no dense copy (10^6 rows x 1,000 columns would be 8 GB)."""
    X = X.tocsc()
    n = X.shape[0]
    nnz = np.diff(X.indptr)
    column = np.repeat(np.arange(X.shape[1]), nnz)
    mean = np.bincount(column, X.data, X.shape[1]) / n
    squares = np.bincount(column, (X.data - mean[column]) ** 2, X.shape[1])
    return np.sqrt((squares + (n - nnz) * mean ** 2) / n)
