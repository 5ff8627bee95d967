"""Covariate balance: standardised differences of the covariate means between target and
comparator, before and after PS adjustment (Austin 2009; CohortMethod's computeCovariateBalance).

d = (mean_target - mean_comparator) / sqrt((var_target + var_comparator) / 2), each population
with its own means and variances.  After stratification, within-stratum means are averaged
with weights proportional to the stratum size; after matching, each comparator of a set with m
comparators weighs 1/m, so each matched set counts once per arm.  |d| > 0.1 flags imbalance.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

THRESHOLD = 0.1


def stratum_weights(treatment, strata) -> np.ndarray:
    """Weights n_s / n_(arm, s): each arm's weighted mean is the size-weighted mean over strata
    of its within-stratum means; strata lacking an arm get weight 0."""
    treatment = np.asarray(treatment).astype(bool)
    strata = np.asarray(strata)
    w = np.zeros(treatment.size)
    for s in np.unique(strata):
        rows = strata == s
        n_t, n_c = np.count_nonzero(rows & treatment), np.count_nonzero(rows & ~treatment)
        if n_t and n_c:
            w[rows & treatment] = rows.sum() / n_t
            w[rows & ~treatment] = rows.sum() / n_c
    return w


def matched_weights(treatment, sets) -> np.ndarray:
    """Weight 1 for matched targets, 1/m for each of the m comparators of a set, 0 unmatched."""
    treatment = np.asarray(treatment).astype(bool)
    sets = np.asarray(sets)
    w = np.zeros(treatment.size)
    comp = (sets >= 0) & ~treatment
    ids, counts = np.unique(sets[comp], return_counts=True)
    w[comp] = 1.0 / counts[np.searchsorted(ids, sets[comp])]
    w[(sets >= 0) & treatment] = 1.0
    return w


def _arm_moments(X, w):
    total = w.sum()
    if total <= 0:
        nan = np.full(X.shape[1], np.nan)
        return nan, nan
    mean = np.asarray(X.T @ w).ravel() / total
    square = np.asarray(X.multiply(X).T @ w).ravel() / total
    return mean, np.maximum(square - mean * mean, 0.0)


def standardized_differences(X, treatment, weights=None) -> pd.DataFrame:
    """mean_target, mean_comparator, std_diff of every column of X (n, p) under ``weights``."""
    X = sp.csc_matrix(X, dtype=np.float64)
    treatment = np.asarray(treatment).astype(bool)
    w = np.ones(treatment.size) if weights is None else np.asarray(weights, np.float64)
    m_t, v_t = _arm_moments(X, np.where(treatment, w, 0.0))
    m_c, v_c = _arm_moments(X, np.where(treatment, 0.0, w))
    sd = np.sqrt((v_t + v_c) / 2.0)
    diff = m_t - m_c
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(sd > 0, diff / sd, np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    return pd.DataFrame({"mean_target": m_t, "mean_comparator": m_c, "std_diff": d})


def covariate_balance(X, names, treatment, weights) -> pd.DataFrame:
    """Balance before (all persons, unweighted) and after (``weights``: stratum_weights or
    matched_weights), one row per covariate, largest |std_diff_before| first."""
    before = standardized_differences(X, treatment).add_suffix("_before")
    after = standardized_differences(X, treatment, weights).add_suffix("_after")
    table = pd.concat([before, after], axis=1)
    table.insert(0, "covariate", list(names))
    table["imbalanced_before"] = table["std_diff_before"].abs() > THRESHOLD
    table["imbalanced_after"] = table["std_diff_after"].abs() > THRESHOLD
    order = np.argsort(-table["std_diff_before"].abs().to_numpy(), kind="stable")
    return table.iloc[order].reset_index(drop=True)


def balance_summary(table: pd.DataFrame) -> dict:
    """max |std diff| and the number of covariates above 0.1, before and after."""
    return {"max_abs_std_diff_before": float(table["std_diff_before"].abs().max()),
            "max_abs_std_diff_after": float(table["std_diff_after"].abs().max()),
            "imbalanced_before": int(table["imbalanced_before"].sum()),
            "imbalanced_after": int(table["imbalanced_after"].sum()),
            "covariates": int(len(table))}
