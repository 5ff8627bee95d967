"""Large-scale propensity scores: L1-regularised logistic regression of treatment on every
baseline covariate with the penalty chosen by cross-validation (Tian, Schuemie & Suchard 2018;
CohortMethod / Cyclops), the preference score (Walker et al. 2013) and PS strata."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data.cohort import Cohort
from ..regression.drivers.cross_validation import cross_validate
from ..core.errors import DataWarning
from ..regression.fit import fit
from ..regression.priors import L1, L2

EQUIPOISE = (0.3, 0.7)   # Walker et al.: preference scores in this range are "in equipoise"


@dataclass
class PropensityScore:
    """ps and logit (n,) in the rows' order, the fitted model and its CV (None when the penalty
    was given); treatment (n,) 0/1."""

    ps: np.ndarray
    logit: np.ndarray
    treatment: np.ndarray
    fit: object
    cv: object
    penalty: object

    @property
    def preference(self) -> np.ndarray:
        return preference_score(self.ps, self.treatment)

    @property
    def equipoise(self) -> float:
        """Share of persons whose preference score lies in [0.3, 0.7]."""
        f = self.preference
        return float(np.mean((f >= EQUIPOISE[0]) & (f <= EQUIPOISE[1])))

    @property
    def coefficients(self) -> pd.Series:
        """The non-zero coefficients, largest first (the intercept included)."""
        coef = self.fit.coef[self.fit.coef != 0]
        return coef.reindex(coef.abs().sort_values(ascending=False).index)


def fit_propensity(X, treatment, names=None, penalty="cv", folds: int = 10, seed: int = 0,
                   grid=None, parallel=None, tol: float = 1e-8, cancel=None) -> PropensityScore:
    """P(treatment = 1 | x) by logistic regression with an unpenalised intercept.

    penalty : "cv" (L1, strength by ``folds``-fold cross-validation of the held-out
        log-likelihood, as Cyclops) | engine.L1 / engine.L2 | None (maximum likelihood)
    Constant and duplicate covariate columns are dropped (they carry nothing a PS can use).
    cancel : a threading.Event that stops the cross-validation (engine.Cancelled)
    """
    treatment = np.asarray(treatment).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        cohort = Cohort.from_arrays(time=np.ones(treatment.size), event=treatment, X=X,
                                    names=names)
    cv = None
    if isinstance(penalty, str) and penalty == "cv":
        cv = cross_validate(cohort, model="logistic", penalty="l1", folds=folds, seed=seed,
                            grid=grid, parallel=parallel, tol=tol, cancel=cancel)
        res, penalty = cv.fit, cv.penalty
    elif penalty is None or isinstance(penalty, L1 | L2):
        res = fit(cohort, model="logistic", penalty=penalty, tol=tol)
    else:
        raise ValueError(f"penalty must be 'cv', engine.L1(lam), engine.L2(lam) or None, got "
                         f"{penalty!r}")
    coef = res.coef.to_numpy()
    logit = coef[0] + cohort.X @ coef[1:]
    ps = 1.0 / (1.0 + np.exp(-logit))
    return PropensityScore(ps=ps, logit=logit, treatment=treatment, fit=res, cv=cv,
                           penalty=penalty)


def preference_score(ps, treatment) -> np.ndarray:
    """Walker et al. (2013): logit F = logit PS - logit P, P the share treated; F = 0.5 where a
    person's PS equals the prevalence of treatment."""
    ps = np.asarray(ps, np.float64)
    share = float(np.mean(treatment))
    logit_f = np.log(ps / (1.0 - ps)) - np.log(share / (1.0 - share))
    return 1.0 / (1.0 + np.exp(-logit_f))


def stratify(ps, strata: int = 5) -> np.ndarray:
    """Stratum 0..K-1 of every person: K equal-sized groups by the quantiles of the PS of all
    persons (CohortMethod's stratifyByPs, base selection "all")."""
    if not (isinstance(strata, int | np.integer) and strata >= 1):
        raise ValueError(f"strata must be a positive integer, got {strata!r}")
    ps = np.asarray(ps, np.float64)
    cuts = np.quantile(ps, np.arange(1, strata) / strata)
    return np.searchsorted(cuts, ps, side="left").astype(np.int64)
