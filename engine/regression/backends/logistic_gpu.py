"""The GPU backend of the logistic likelihood: CuPy device arrays and the kernels of
cuda/logistic/logistic.cu, with X^T v by cuda/column_dots.cu (the Cox backend's kernel).

Same methods and numbers as LogisticCpuBackend.  X's CSC columns (int32 rows), y, w and the
state eta, r and h live on the device; per coordinate only the column's slice bounds go down
and (g, h) come back:

- update(j, delta): logistic_update, one thread per non-zero of column j (O(nnz_j)): eta, r
  and h of those rows;
- grad_hess(j): logistic_grad_hess (block partials of x_j' r and (x_j^2)' h, one thread per
  non-zero) folded by logistic_finish in a fixed order;
- loglik: logistic_terms (every row's r, h and log-likelihood term) folded the same way;
  loglik_gradient adds column_dots (X^T r);
- information and quadratic_step: r and h come to the host, where LogisticCpuBackend's
  information_at and step_at build the s x s information and run the proximal-Newton inner
  loop (one download of two N-vectors per outer step, as the SCCS GPU backend does).

Verification: the source compiles with nvcc and fits 256-thread blocks
(tests/engine/regression/backends/test_gpu_kernels_compile.py); this class runs unchanged on the CUDA emulator of
tests/support/cuda_emulator against LogisticCpuBackend to 1e-8 per kernel and per fit, and in the
emulator's three thread orders (tests/engine/regression/backends/test_logistic_gpu.py).  It has not run on a device.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .logistic_cpu import LogisticCpuBackend
from ...core.device import cupy_on_device, cupy_or_error

CUDA_DIR = Path(__file__).with_name("cuda")
SOURCE = CUDA_DIR / "logistic" / "logistic.cu"
ENTRY_POINTS = ("logistic_terms", "logistic_update", "logistic_add_column",
                "logistic_grad_hess", "logistic_finish", "poisson_terms", "poisson_update")
THREADS = 256           # SCAN_THREADS of flag_scan.cuh


@functools.lru_cache(maxsize=None)
def _kernels() -> dict:
    """The kernels of logistic.cu (the logistic and Poisson likelihoods) and column_dots.cu,
    compiled by NVRTC (float64)."""
    cupy = cupy_or_error()
    options = ("-std=c++17", f"-I{CUDA_DIR}", "-DSURVSCAN_REAL=double")
    module = cupy.RawModule(code=SOURCE.read_text(), options=options)
    out = {name: module.get_function(name) for name in ENTRY_POINTS}
    dots = cupy.RawModule(code=(CUDA_DIR / "column_dots.cu").read_text(), options=options)
    out["column_dots"] = dots.get_function("column_dots")
    return out


def _blocks(count: int) -> int:
    return max(1, -(-int(count) // THREADS))


class LogisticGpuBackend:
    """One logistic fit's state on a CUDA device (see the module docstring; parameters as
    LogisticCpuBackend)."""

    name = "gpu"

    def __init__(self, X: sp.csc_matrix, y: np.ndarray, w: np.ndarray):
        cp = cupy_on_device(X.shape[0])
        self.cp = cp
        self._k = _kernels()
        self.host = self._host_backend(X, y, w)          # host arrays and the inner solver
        indptr = np.asarray(X.indptr, np.int64)
        self._indptr_host = indptr
        self._indptr = cp.asarray(indptr)
        self._vptr = cp.asarray(indptr[:-1])              # every column stores its values
        self._rows = cp.asarray(X.indices.astype(np.int32))
        self._vals = cp.asarray(X.data.astype(np.float64))
        self._n = X.shape[0]
        self._y = cp.asarray(self.host.y)
        self._w = cp.asarray(self.host.w)
        self._eta, self._r, self._h = cp.zeros(self._n), cp.zeros(self._n), cp.zeros(self._n)
        widest = int(np.max(np.diff(indptr), initial=1))
        self._partial = cp.zeros(max(_blocks(self._n), 2 * _blocks(widest)))
        self._out = cp.zeros(2)
        self._ll = None
        self.set_beta(np.zeros(X.shape[1]))

    def _host_backend(self, X, y, w):
        """The CPU backend of the same likelihood: the host's arrays and inner solver."""
        return LogisticCpuBackend(X, y, w)

    @property
    def X(self):
        return self.host.X

    @property
    def eta(self) -> np.ndarray:
        """The linear predictor, downloaded."""
        return self._eta.get()

    def _column(self, j):
        lo, hi = int(self._indptr_host[j]), int(self._indptr_host[j + 1])
        return self._rows[lo:hi], self._vals[lo:hi], np.int64(hi - lo)

    def _finish(self, blocks: int, count: int) -> np.ndarray:
        self._k["logistic_finish"]((1,), (THREADS,),
                                   (self._partial, np.int64(blocks), np.int32(count), self._out))
        return self._out[:count].get()

    def _terms(self) -> float:
        """r and h of every row on the device; returns l."""
        blocks = _blocks(self._n)
        self._k["logistic_terms"]((blocks,), (THREADS,),
                                  (np.int64(self._n), self._eta, self._y, self._w, self._r,
                                   self._h, self._partial))
        return float(self._finish(blocks, 1)[0])

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        """eta = X beta from scratch, column by column (the CPU's order of additions)."""
        self._eta.fill(0)
        beta = np.asarray(beta, np.float64)
        for j in np.flatnonzero(beta != 0):
            rows, vals, nnz = self._column(j)
            if nnz:
                self._k["logistic_add_column"]((_blocks(nnz),), (THREADS,),
                                               (rows, vals, nnz, np.float64(beta[j]),
                                                self._eta))
        self._ll = self._terms()

    def set_weights(self, w: np.ndarray) -> None:
        """New case weights (a held-out fold is weight 0); eta is kept."""
        self._w.set(np.ascontiguousarray(w, dtype=np.float64))
        self._ll = self._terms()

    def update(self, j: int, delta: float) -> None:
        rows, vals, nnz = self._column(j)
        if not nnz or delta == 0.0:
            return
        self._k["logistic_update"]((_blocks(nnz),), (THREADS,),
                                   (rows, vals, nnz, np.float64(delta), self._eta, self._y,
                                    self._w, self._r, self._h))
        self._ll = None

    # -- likelihood ------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        rows, vals, nnz = self._column(j)
        if not nnz:
            return 0.0, 0.0
        blocks = _blocks(nnz)
        self._k["logistic_grad_hess"]((blocks,), (THREADS,),
                                      (rows, vals, nnz, self._r, self._h, self._partial))
        g, h = self._finish(blocks, 2)
        return float(g), float(h)

    def loglik(self) -> float:
        if self._ll is None:
            self._ll = self._terms()
        return self._ll

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        ll = self.loglik()
        p = self._indptr_host.size - 1
        g = self.cp.zeros(p)
        self._k["column_dots"]((p,), (THREADS,),
                               (self._indptr, self._rows, self._vals, self._vptr, self._r, g))
        return ll, g.get()

    def information(self, cols) -> tuple[float, np.ndarray, np.ndarray]:
        """As LogisticCpuBackend.information, from r and h computed on the device."""
        ll = self.loglik()
        return (ll, *self.host.information_at(cols, self._r.get(), self._h.get()))

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """The proximal-Newton step of LogisticCpuBackend, its inner loop on the host."""
        ll = self.loglik()
        return (ll, *self.host.step_at(self._r.get(), self._h.get(), coords, beta, lam1,
                                       lam2, tol, max_cycles, fresh))
