"""Benchmark problems: simulated cohorts (engine.simulate) and penalty conversions.

survscan's L1(lam) minimises -l(b) + lam * |b|_1 and L2(lam) minimises -l(b) + lam/2 * |b|^2,
where l is the summed Breslow log partial likelihood. The peers average the likelihood over N:
Coxnet (glmnet) and skglm minimise -l(b)/N + alpha * pen(b), so alpha = lam / N. lifelines
penalises the coefficients of standardised covariates (b_j * sd_j) with n * penalizer, so its
per-covariate penalizer is lam / (N sd_j) for L1 and lam / (N sd_j^2) for L2.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

import engine
from engine.data.cohort import Cohort
from engine.data.simulate import simulate_arrays

PENALTIES = ("l1", "l2", "none")


@dataclass
class Problem:
    """One simulated cohort and penalised Cox problem."""

    n: int
    p: int
    density: float
    n_strata: int
    penalty: str
    ratio: float
    seed: int
    time: np.ndarray
    event: np.ndarray
    X: sp.csc_matrix
    strata: np.ndarray | None
    beta_true: np.ndarray
    cohort: object
    lam_max: float
    lam: float

    @property
    def names(self):
        return [f"x{j}" for j in range(self.p)]

    def engine_penalty(self):
        """The survscan penalty object (None when unpenalised)."""
        if self.penalty == "l1":
            return engine.L1(self.lam)
        if self.penalty == "l2":
            return engine.L2(self.lam)
        return None

    def penalty_value(self, coef):
        if self.penalty == "l1":
            return self.lam * np.abs(coef).sum()
        if self.penalty == "l2":
            return 0.5 * self.lam * np.dot(coef, coef)
        return 0.0

    def objective(self, coef):
        """Penalised objective -l(coef) + pen(coef), with l from engine.loglik (Breslow)."""
        coef = np.asarray(coef, dtype=float)
        return -float(engine.loglik(self.cohort, coef, ties="breslow")) + self.penalty_value(coef)

    def mean_alpha(self):
        """Coxnet's and skglm's alpha: lam / N."""
        return self.lam / self.n

    def lifelines_penalizer(self):
        """Per-covariate lifelines penalizer (it penalises standardised coefficients)."""
        sd = column_sd(self.X)
        if self.penalty == "l1":
            return self.lam / (self.n * sd)
        return self.lam / (self.n * sd ** 2)


def column_sd(X):
    """Column standard deviations (ddof=1, as pandas, which lifelines uses) of a sparse X."""
    n = X.shape[0]
    mean = np.asarray(X.mean(axis=0)).ravel()
    mean_sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
    return np.sqrt((mean_sq - mean ** 2) * n / (n - 1))


def lambda_max(cohort, p):
    """Smallest L1 lam with an all-zero solution: max_j |d l / d b_j| at b = 0."""
    return float(np.max(np.abs(np.asarray(engine.gradient(cohort, np.zeros(p), ties="breslow")))))


def make_problem(n, p, density=0.05, n_strata=1, penalty="l1", ratio=0.1, seed=0):
    """Simulate a cohort and set lam = ratio * lambda_max (for L2 too; 0 when unpenalised)."""
    if penalty not in PENALTIES:
        raise ValueError(f"penalty must be one of {PENALTIES}, got {penalty!r}")
    time, event, X, beta, strata = simulate_arrays(n, p, density=density, n_strata=n_strata,
                                                   seed=seed)
    names = [f"x{j}" for j in range(p)]
    cohort = Cohort.from_arrays(time=time, event=event, X=X, names=names, strata=strata)
    lam_max = lambda_max(cohort, p)
    lam = 0.0 if penalty == "none" else ratio * lam_max
    return Problem(n, p, density, n_strata, penalty, ratio, seed, time, event, X, strata, beta,
                   cohort, lam_max, lam)
