"""The GPU backend of the Poisson likelihood: LogisticGpuBackend with the Poisson row terms
(poisson_terms, poisson_update of cuda/logistic/logistic.cu) and the offset log t on the device;
every column kernel, the host's inner solver and the information are the logistic backend's.

Verification: as the logistic backend's, on the CUDA emulator of tests/support/cuda_emulator
against PoissonCpuBackend to 1e-8 per kernel and per fit (tests/engine/regression/backends/
test_poisson_gpu.py).  It has not run on a device.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .logistic_gpu import THREADS, LogisticGpuBackend, _blocks
from .poisson_cpu import PoissonCpuBackend


class PoissonGpuBackend(LogisticGpuBackend):
    """One Poisson fit's state on a CUDA device (parameters as PoissonCpuBackend)."""

    def __init__(self, X: sp.csc_matrix, y: np.ndarray, w: np.ndarray, exposure: np.ndarray):
        self._exposure = np.asarray(exposure, np.float64)
        super().__init__(X, y, w)

    def _host_backend(self, X, y, w):
        host = PoissonCpuBackend(X, y, w, self._exposure)
        self._log_t = self.cp.asarray(host.log_t)
        return host

    def _terms(self) -> float:
        blocks = _blocks(self._n)
        self._k["poisson_terms"]((blocks,), (THREADS,),
                                 (np.int64(self._n), self._eta, self._log_t, self._y, self._w,
                                  self._r, self._h, self._partial))
        return float(self._finish(blocks, 1)[0])

    def update(self, j: int, delta: float) -> None:
        rows, vals, nnz = self._column(j)
        if not nnz or delta == 0.0:
            return
        self._k["poisson_update"]((_blocks(nnz),), (THREADS,),
                                  (rows, vals, nnz, np.float64(delta), self._eta, self._log_t,
                                   self._y, self._w, self._r, self._h))
        self._ll = None
