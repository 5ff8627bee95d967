"""The self-controlled case series: a Poisson model of each case's events over its eras,
conditioned on the case's total (Suchard2013, eq. 1-2), so every case-level effect cancels.

The model sorts the eras by case once and hands them to a backend (sccs_cpu, or sccs_gpu on a
CUDA device); same interface as CoxModel, so every solver, the profile likelihood,
cross-validation and the bootstrap work unchanged.  Case weights come in per era (the caller's row order) and must be equal within a
case: folds and bootstrap draws resample whole cases.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..backends import get_backend
from ...core.errors import CohortError
from ...sccs.data import SccsData
from .base import BackendModel


class SccsModel(BackendModel):
    """Conditional Poisson regression of ``sccs.events`` on ``sccs.X`` with offset log length."""

    def __init__(self, sccs, backend: str = "cpu"):
        if not isinstance(sccs, SccsData):
            raise CohortError(f"model='sccs' fits an engine.SccsData, not a "
                              f"{type(sccs).__name__}: build the eras with SccsData.from_frame, "
                              "from_arrays or from_cases.")
        backend_class = get_backend("sccs", backend)
        codes = pd.factorize(np.asarray(sccs.case))[0]
        self.order = (None if np.all(np.diff(codes) >= 0)
                      else np.argsort(codes, kind="stable"))
        X = sccs.X
        if self.order is not None:
            codes = codes[self.order]
            X = X[self.order, :]
        X = X.tocsc()
        X.sort_indices()
        sizes = np.bincount(codes)
        case_ptr = np.concatenate([[0], np.cumsum(sizes[sizes > 0])])
        length = np.asarray(sccs.length, np.float64)
        events = np.asarray(sccs.events, np.float64)
        if self.order is not None:
            length, events = length[self.order], events[self.order]
        self.names = list(sccs.names)
        self.backend = backend_class(X, case_ptr, length, events)
        self.scale = _column_range(X)

    @property
    def p(self) -> int:
        return len(self.names)

    def to_backend_rows(self, values):
        return np.asarray(values) if self.order is None else np.asarray(values)[self.order]

    def set_weights(self, w):
        """Case weights given per era (caller's row order), equal within each case."""
        w = np.asarray(w, dtype=np.float64)
        b = self.backend
        if w.shape != (b.length.size,):
            raise ValueError(f"weights must have {b.length.size} values, got shape {w.shape}")
        if self.order is not None:
            w = w[self.order]
        starts = b.case_ptr[:-1]
        first = w[starts]
        if np.any(np.minimum.reduceat(w, starts) != first) or \
                np.any(np.maximum.reduceat(w, starts) != first):
            raise ValueError("SCCS weights are case weights: give every era of a case the same "
                             "weight.")
        b.set_weights(first)


def _column_range(X) -> np.ndarray:
    """max - min of each column, implicit zeros included: the scale of a coefficient."""
    hi = np.asarray(X.max(axis=0).toarray()).ravel()
    lo = np.asarray(X.min(axis=0).toarray()).ravel()
    return hi - lo
