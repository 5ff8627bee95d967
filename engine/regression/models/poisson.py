"""Poisson regression of events on person-time with an unpenalised intercept: incidence rate
ratios adjusted for covariates (R's glm(d ~ x + offset(log(t)), family = poisson)), and on
follow-up split into bands (cut_points, or engine.split_lexis by attained age) the
piecewise-exponential model.

The cohort is an ordinary ``engine.Cohort``: each row's events are its event indicator (of
``cause`` under competing risks: the other causes end person-time without an event) and its
person-time is stop - start, so (start, stop] episodes of one subject add up.  The model
prepends the column of ones "(intercept)" (the log rate at zero covariates), which
``engine.fit`` leaves out of the penalty.  Same interface as the other models: every solver,
penalty, path, cross-validation and bootstrap works unchanged.
"""
from __future__ import annotations

import numpy as np

from ..backends import get_backend
from ...core.errors import CohortError
from .logistic import LogisticModel


class PoissonModel(LogisticModel):
    """Poisson log-likelihood of the events of ``cohort`` over its person-time (the intercept,
    weights and linear predictor handled as LogisticModel's)."""

    def __init__(self, cohort, cause: int = 1, backend: str = "cpu"):
        backend_class = get_backend("poisson", backend)
        event = np.asarray(cohort.event)
        causes = list(getattr(cohort, "causes", [1]))
        if len(causes) > 1 and cause not in causes:
            raise CohortError(f"cause {cause!r} is not an event code of this cohort (codes: "
                              f"{causes}); pass cause= one of them.")
        y = (event == cause) if len(causes) > 1 else (event > 0)
        if cohort.strata is not None:
            raise CohortError("Poisson regression estimates the rate of each stratum: enter the "
                              "strata column as a covariate (a categorical term) instead of "
                              "strata=.")
        start = 0.0 if cohort.start is None else np.asarray(cohort.start, np.float64)
        exposure = np.asarray(cohort.time, np.float64) - start
        self.cause = cause if len(causes) > 1 else None
        self.events = y.astype(np.float64)          # each row's count (the saturated fit's)
        self._t = exposure
        self.backend = backend_class(*self._with_intercept(cohort, self.events), exposure)

    def offset_term(self) -> float:
        """sum w y log t over the rows: the log-likelihood's part from the person-time offset,
        which depends on how follow-up is cut into rows (a band split moves an event's t to
        its last piece's), not on beta; two fits of differently split rows compare their
        log-likelihoods without it (engine.lr_test)."""
        counted = self._y > 0
        return float(self._w[counted] @ (self._y[counted] * np.log(self._t[counted])))

    def _intercept_only(self) -> float:
        """The intercept-only estimate: the log of the weighted events over person-time."""
        return float(np.log(float(self._w @ self._y) / float(self._w @ self._t)))
