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
        # the CSC arrays with the column of ones in front, in one copy (scipy's hstack took
        # 0.4 s at 10^6 rows x 1,000 columns at 5%)
        C = sp.csc_matrix(cohort.X)
        C.sort_indices()
        X = sp.csc_matrix((np.concatenate([np.ones(n), C.data.astype(np.float64, copy=False)]),
                           np.concatenate([np.arange(n, dtype=C.indices.dtype), C.indices]),
                           np.concatenate([[0], C.indptr.astype(np.int64) + n])),
                          shape=(n, C.shape[1] + 1))
        w = np.ones(n) if cohort.weights is None else np.asarray(cohort.weights, np.float64)
        self.scale = np.asarray(X.max(axis=0).toarray() - X.min(axis=0).toarray()).ravel()
        self.scale[0] = 1.0
        self._y, self._w = np.asarray(y, np.float64), w
        return X, self._y, w

    def start(self) -> np.ndarray:
        """The intercept-only fit (every covariate 0): the strong rule then screens the
        covariates by their gradient there.  At intercept 0 every column's gradient looked
        large, so none was screened (a 10^6 x 1,000 L1 Poisson fit: all 1,000 columns in each
        inner solve, 48 s)."""
        beta = np.zeros(self.p)
        with np.errstate(divide="ignore", invalid="ignore"):
            b0 = self._intercept_only()
        beta[0] = b0 if np.isfinite(b0) else 0.0     # weights without events (a fold): 0
        return beta

    def _intercept_only(self) -> float:
        """The intercept-only estimate: the weighted log odds of the response."""
        events = float(self._w @ self._y)
        return float(np.log(events / (float(self._w.sum()) - events)))

    @property
    def p(self) -> int:
        return len(self.names)

    def set_weights(self, w):
        """Replace the case weights (caller's row order): folds and bootstrap replicates."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.backend.X.shape[0],):
            raise ValueError(f"weights must have {self.backend.X.shape[0]} values, got shape "
                             f"{w.shape}")
        self._w = w
        self.backend.set_weights(w)

    def linear_predictor(self) -> np.ndarray:
        """eta of every row at the current beta (caller's order): logit P(y = 1), or the log
        rate of PoissonModel."""
        return self.backend.eta.copy()
