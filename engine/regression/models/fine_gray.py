"""The Fine-Gray proportional subdistribution hazards model (Fine & Gray 1999; Yang2022 sec. 2.2).

The log pseudo-likelihood of cause k (Yang2022 eq. 7) with cmprsk::crr's censoring weights:
a subject r with a competing event at y_r stays in the risk set at a cause-k event time t > y_r
with weight G(t-)/G(y_r-), G the Kaplan-Meier estimate of the censoring distribution
(engine.censoring); rows with y_r >= t are in it with weight 1.  Ties Breslow (as crr), case
weights multiply, a baseline per stratum (risk sets within the stratum), and one G for all rows
or, with ``censoring_strata``, one per stratum.  Censorings tied with events follow crr's rule
(the event is at risk for censoring at its time) or, with ``censoring_ties="finegray"``, R
survival finegray()'s (Geskus 2011: it is not; engine.censoring), in G and in the variance's
censoring term alike: the finegray fit is crr's method on data whose events precede the
censorings tied with them.  Same interface as CoxModel, so every solver works unchanged, plus
``sandwich(cols)`` for Fine & Gray's variance.
"""
from __future__ import annotations

import numpy as np

from .. import modeldata
from ..backends import get_backend
from ...data.censoring import CENSORING_TIES, left_limits
from ...core.errors import CohortError
from .base import BackendModel


class FineGrayModel(BackendModel):
    """Fine-Gray regression of one cause on one cohort, sorted once and held by a backend.

    Parameters
    ----------
    cohort : engine.Cohort, event codes 0 (censored) and 1..m (causes)
    cause : int, the cause of interest (one of ``cohort.causes``)
    backend : "cpu" | "gpu" | "auto" (the GPU when CuPy sees a CUDA device)
    censoring_strata : bool, one censoring Kaplan-Meier per stratum instead of one for all
    censoring_ties : "crr" | "finegray", who is at risk for a censoring tied with an event
    """

    def __init__(self, cohort, cause: int = 1, backend: str = "cpu",
                 censoring_strata: bool = False, censoring_ties: str = "crr"):
        if censoring_ties not in CENSORING_TIES:
            raise ValueError(f"censoring_ties={censoring_ties!r}: choose from {CENSORING_TIES} "
                             "(cmprsk::crr's rule, or R survival finegray()'s).")
        causes = tuple(getattr(cohort, "causes", ()))
        if cause not in causes:
            raise CohortError(
                f"column {cohort.source.get('event', 'event')!r}: cause={cause!r} is not an "
                f"event code of this cohort; its causes are {list(causes)}.")
        if cohort.start is not None:
            raise CohortError("Fine-Gray needs one row per subject: this cohort has entry "
                              "times (start=). Fit without start=, or use model='cox'.")
        backend_class = get_backend("fine_gray", backend)
        self.cause = int(cause)
        self.ties = "breslow"
        self.censoring_strata = bool(censoring_strata)
        self.censoring_ties = censoring_ties
        self.names = list(cohort.names)
        event = np.asarray(cohort.event)
        self.data = md = modeldata.build(cohort, event=event == cause)
        code = event[md.order]
        self._censored = code == 0
        self._competing = (code > 0) & (code != cause)
        self._group = np.zeros(md.n, np.int64)
        if self.censoring_strata:
            self._group = np.repeat(np.arange(md.strata_bounds.size - 1),
                                    np.diff(md.strata_bounds))
        omega, gl = self._censoring_weights()
        self.backend = backend_class(md, omega, gl, self._censored, self.censoring_strata,
                                     events_first=censoring_ties == "finegray")
        self.scale = modeldata.column_range(md)
        self.n_events = int(np.count_nonzero(event == cause))

    @property
    def p(self) -> int:
        return self.data.p

    def _censoring_weights(self):
        """(omega, gl) in sorted order: G(y_r-) from the censoring Kaplan-Meier of the current
        case weights, and 1/G(y_r-) on competing rows."""
        md = self.data
        gl = left_limits(md.stop, self._censored, md.weights, self._group,
                         self.censoring_ties)
        safe = self._competing & (gl > 0)
        omega = np.where(safe, 1.0 / np.where(safe, gl, 1.0), 0.0)
        return omega, gl

    def set_weights(self, w):
        """Replace the case weights (caller's row order), keeping the sorted layout.  The
        censoring distribution G is re-estimated with them, so a zero-weight row leaves the
        pseudo-likelihood exactly as if deleted (folds, bootstrap replicates)."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.data.n,):
            raise ValueError(f"weights must have {self.data.n} values, got shape {w.shape}")
        self.backend.set_weights(w[self.data.order])
        self.backend.set_censoring(*self._censoring_weights())

    @property
    def censoring_left_limits(self) -> np.ndarray:
        """G(y_i-) of each row (caller's order): the crr weight of a competing row r at a
        cause-k event time t > y_r is G(t-)/G(y_r-), with G(t-) that of the event's rows."""
        out = np.empty(self.data.n)
        out[self.data.order] = self.backend.gl
        return out

    def sandwich(self, cols):
        """(information, sum_i u_i u_i^T) over columns ``cols``; V = I^-1 middle I^-1."""
        return self.backend.sandwich(cols)
