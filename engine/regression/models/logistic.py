"""Logistic regression with an unpenalised intercept: the propensity-score model of the
comparative new-user design (large-scale PS: L1 over thousands of baseline covariates).

A cohort for logistic regression is an ordinary ``engine.Cohort`` whose ``event`` is the 0/1
response (``time`` is not used: pass ones), so validation, case weights, subject ids and the
fold and bootstrap machinery are shared with the Cox models.  The model prepends a column of
ones named "(intercept)", which ``engine.fit`` always leaves out of the penalty.  Same interface
as CoxModel, so every solver works unchanged.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..backends import get_backend
from ...core.errors import CohortError
from .base import BackendModel

INTERCEPT = "(intercept)"


class LogisticModel(BackendModel):
    """Bernoulli log-likelihood of ``cohort.event`` given ``cohort.X`` and an intercept."""

    unpenalized = (INTERCEPT,)

    def __init__(self, cohort, backend: str = "cpu"):
        backend_class = get_backend("logistic", backend)
        event_column = cohort.source.get("event", "event")
        y = np.asarray(cohort.event)
        if len(getattr(cohort, "causes", [1])) > 1 or y.max() > 1:
            raise CohortError(f"column {event_column!r}: logistic regression needs a 0/1 "
                              "response; recode the column to 0/1.")
        if y.min() == y.max():
            raise CohortError(f"column {event_column!r}: every row has response {y[0]}; "
                              "logistic regression needs both 0s and 1s.")
        if cohort.strata is not None or cohort.start is not None:
            raise CohortError("logistic regression takes one row per subject without strata "
                              "or entry times (conditional logistic regression is not "
                              "available); build the cohort without strata= and start=.")
        self.backend = backend_class(*self._with_intercept(cohort, y))

    def _with_intercept(self, cohort, y) -> tuple:
        """(X with the column of ones first, y, w): the backend's design; sets ``names`` and
        ``scale``."""
        if INTERCEPT in cohort.names:
            raise CohortError(f"a covariate is named {INTERCEPT!r}; the model adds that column "
                              "itself: rename or drop it.")
        n = cohort.n
        self.names = [INTERCEPT, *cohort.names]
        X = sp.hstack([sp.csc_matrix(np.ones((n, 1))), cohort.X], format="csc")
        X.sort_indices()
        w = np.ones(n) if cohort.weights is None else np.asarray(cohort.weights, np.float64)
        self.scale = np.asarray(X.max(axis=0).toarray() - X.min(axis=0).toarray()).ravel()
        self.scale[0] = 1.0
        return X, np.asarray(y, np.float64), w

    @property
    def p(self) -> int:
        return len(self.names)

    def set_weights(self, w):
        """Replace the case weights (caller's row order): folds and bootstrap replicates."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.backend.X.shape[0],):
            raise ValueError(f"weights must have {self.backend.X.shape[0]} values, got shape "
                             f"{w.shape}")
        self.backend.set_weights(w)

    def linear_predictor(self) -> np.ndarray:
        """eta of every row at the current beta (caller's order): logit P(y = 1), or the log
        rate of PoissonModel."""
        return self.backend.eta.copy()
