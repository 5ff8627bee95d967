"""The Cox partial likelihood (Breslow or Efron ties, strata, case weights, entry times).

The model knows what the likelihood is; the backend knows how to scan (models.base gives the
interface the solvers use).
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .. import modeldata
from ..backends import get_backend
from ...core.errors import CohortError
from .base import BackendModel


class CoxModel(BackendModel):
    """Cox proportional hazards on one cohort, sorted once and held by a backend."""

    def __init__(self, cohort, ties: str = "breslow", backend: str = "cpu",
                 precision: str = "float64"):
        backend_class = get_backend("cox", backend)
        options = {}
        if precision == "float32":
            if backend_class.name != "gpu":
                raise ValueError("precision='float32' runs the scans on the GPU in single "
                                 f"precision; backend={backend!r} has no GPU here. Use "
                                 "precision='float64', or backend='gpu' on a CUDA machine.")
            options["dtype"] = np.float32
        causes = getattr(cohort, "causes", [1])
        if len(causes) > 1 or (len(causes) == 1 and causes[0] != 1):
            raise CohortError(
                f"column {cohort.source.get('event', 'event')!r}: the Cox model needs event codes "
                f"0/1 but the cohort has causes {list(causes)}; fit model='fine_gray' with "
                f"cause=k, or recode the column to 0/1.")
        self.ties = ties
        self.names = list(cohort.names)
        self.data = modeldata.build(cohort)
        # what twin() starts from: set_weights replaces a ModelData's weights and flags, never
        # writes into them, so these arrays stay as built
        self._built = (backend_class, options, self.data.weights, self.data.flags)
        self.backend = backend_class(self.data, efron=(ties == "efron"), **options)
        self.scale = modeldata.column_range(self.data)

    def twin(self) -> CoxModel:
        """This model on the same sorted rows and columns (shared, read only) with weights,
        a linear predictor and scratch of its own, as built whatever weights this one holds
        now: for threads fitting variants of one layout side by side."""
        backend_class, options, weights, flags = self._built
        twin = copy.copy(self)
        twin.data = dataclasses.replace(self.data, weights=weights, flags=flags)
        twin.backend = backend_class(twin.data, efron=(self.ties == "efron"), **options)
        return twin

    @property
    def p(self) -> int:
        return self.data.p

    def set_weights(self, w):
        """Replace the case weights (caller's row order), keeping the sorted layout: folds and
        bootstrap replicates differ only in weights.  Zero-weight rows leave every risk set and
        event exactly, as if deleted."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.data.n,):
            raise ValueError(f"weights must have {self.data.n} values, got shape {w.shape}")
        self.backend.set_weights(w[self.data.order])

    def to_backend_rows(self, values):
        return np.asarray(values)[self.data.order]

