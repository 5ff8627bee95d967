"""The GPU backend of the conditional Poisson (SCCS) likelihood: CuPy device arrays and the
kernels of cuda/sccs/sccs.cu (Suchard2013, sec. 2.4 and Listings 1-3).

Same methods and numbers as SccsCpuBackend.  The eras (sorted by case), X's CSC columns with
int32 era positions, and the state eta, E, D and the per-case shifts live on the device;
per coordinate only the column's slice bounds go down and (g, h) come back:

- grad_hess(j): sccs_numerators (per-case sums of E x by atomicAdd into a scratch) then
  sccs_grad_hess_blocks (one thread per non-zero: the fused transformation and reduction of
  Listing 2 over the cases column j touches) and sccs_finish (block partials, fixed order);
- update(j, delta): sccs_update, Suchard2013's Listing 3 with an atomic update of each touched
  case's denominator;
- loglik / loglik_gradient: sccs_case_terms (one thread per case, re-summing D from E) and the
  CSC kernel sccs_column_dots; the sums over cases by CuPy reductions;
- information and quadratic_step: r and p = E / D come to the host, where the CPU's kernels
  (SccsCpuBackend.information_at, sccs_kernels) build the information matrix and run the
  proximal-Newton inner loop (a
  sequential coordinate loop: one download of two K-vectors per outer step).

Verification: the source compiles with nvcc and fits 256-thread blocks (tests/engine/regression/backends/test_sccs_gpu.py);
this class runs unchanged on the CUDA emulator of tests/support/cuda_emulator against SccsCpuBackend to
1e-8 per kernel and per fit, and in the emulator's three thread orders (no race: they agree to
the rounding of the atomic sums, whose order is not fixed on a device either).  It has not run
on a device.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import sccs_kernels as k
from .hazard_state import RESHIFT
from .sccs_cpu import SccsCpuBackend
from ...core.device import cupy_on_device, cupy_or_error

SOURCE = Path(__file__).with_name("cuda") / "sccs" / "sccs.cu"
ENTRY_POINTS = ("sccs_recentre", "sccs_case_terms", "sccs_numerators", "sccs_grad_hess_blocks",
                "sccs_finish", "sccs_update", "sccs_add_column", "sccs_column_dots")
THREADS = 256           # SCCS_THREADS of sccs.cu


@functools.lru_cache(maxsize=None)
def _kernels() -> dict:
    """Every kernel of sccs.cu, compiled by NVRTC through cupy.RawModule (float64)."""
    cupy = cupy_or_error()
    module = cupy.RawModule(code=SOURCE.read_text(), options=("-std=c++17",))
    return {name: module.get_function(name) for name in ENTRY_POINTS}


def _blocks(count: int) -> int:
    return max(1, -(-int(count) // THREADS))


class SccsGpuBackend:
    """One SCCS fit's state on a CUDA device (see the module docstring; parameters as
    SccsCpuBackend)."""

    name = "gpu"

    def __init__(self, X: sp.csc_matrix, case_ptr, length, events):
        cp = cupy_on_device(X.shape[0], "eras")
        self.cp = cp
        self._k = _kernels()
        self.host = SccsCpuBackend(X, case_ptr, length, events)   # host arrays and kernels
        h = self.host
        self._indptr_host = h._indptr
        self._indptr = cp.asarray(h._indptr)
        self._rows = cp.asarray(h._indices.astype(np.int32))
        self._vals = cp.asarray(h._values)
        self._case_ptr = cp.asarray(h.case_ptr)
        self._case_of = cp.asarray(h.case_of.astype(np.int32))
        self._length = cp.asarray(h.length)
        self._y = cp.asarray(h.y)
        self._log_length = cp.asarray(h.log_length)
        self._n = cp.asarray(h.n)
        n_eras, self._cases = h.length.size, h.D.size
        self._w = cp.ones(self._cases)
        self.eta = cp.zeros(n_eras)
        self.E, self._r, self._q = cp.zeros(n_eras), cp.zeros(n_eras), cp.zeros(n_eras)
        self.D, self._shift = cp.zeros(self._cases), cp.zeros(self._cases)
        self._ll_case, self._N1 = cp.zeros(self._cases), cp.zeros(self._cases)
        blocks = _blocks(max(1, int(np.max(np.diff(h._indptr), initial=1))))
        self._partial = cp.zeros(2 * blocks)
        self._gh = cp.zeros(2)
        self._flag = cp.zeros(1, np.int32)
        self.set_beta(np.zeros(X.shape[1]))

    @property
    def X(self):
        return self.host.X

    @property
    def case_ptr(self):
        return self.host.case_ptr

    @property
    def length(self):
        return self.host.length

    def _column(self, j):
        lo, hi = int(self._indptr_host[j]), int(self._indptr_host[j + 1])
        return self._rows[lo:hi], self._vals[lo:hi], np.int64(hi - lo)

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        """eta = X beta from scratch, column by column (the CPU's order of additions), then
        every case re-centred."""
        self.eta.fill(0)
        beta = np.asarray(beta, np.float64)
        for j in np.flatnonzero(beta != 0):
            rows, vals, nnz = self._column(j)
            if nnz:
                self._k["sccs_add_column"]((_blocks(nnz),), (THREADS,),
                                           (rows, vals, nnz, np.float64(beta[j]), self.eta))
        self._recentre()

    def _recentre(self) -> None:
        self._k["sccs_recentre"]((_blocks(self._cases),), (THREADS,),
                                 (self._case_ptr, np.int32(self._cases), self.eta,
                                  self._length, self.E, self.D, self._shift))
        self._flag.fill(0)

    def set_weights(self, w_case: np.ndarray) -> None:
        self._w.set(np.ascontiguousarray(w_case, dtype=np.float64))

    def update(self, j: int, delta: float) -> None:
        rows, vals, nnz = self._column(j)
        if not nnz or delta == 0.0:
            return
        self._k["sccs_update"]((_blocks(nnz),), (THREADS,),
                               (rows, vals, nnz, self._case_of, np.float64(delta), self.eta,
                                self._length, self.E, self.D, self._shift,
                                np.float64(RESHIFT), self._flag))
        if int(self._flag.get()[0]):
            self._recentre()

    # -- likelihood ------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        rows, vals, nnz = self._column(j)
        if not nnz:
            return 0.0, 0.0
        blocks = _blocks(nnz)
        self._k["sccs_numerators"]((blocks,), (THREADS,),
                                   (rows, vals, nnz, self._case_of, self.E, self._N1))
        partial_g, partial_h = self._partial[:blocks], self._partial[blocks:2 * blocks]
        self._k["sccs_grad_hess_blocks"]((blocks,), (THREADS,),
                                         (rows, vals, nnz, self._case_of, self._y, self.E,
                                          self.D, self._w, self._n, self._N1, partial_g,
                                          partial_h))
        self._k["sccs_finish"]((1,), (THREADS,),
                               (partial_g, partial_h, np.int32(blocks), self._gh))
        g, h = self._gh.get()
        return float(g), float(h)

    def _case_terms(self, residuals: bool) -> float:
        self._k["sccs_case_terms"]((_blocks(self._cases),), (THREADS,),
                                   (self._case_ptr, np.int32(self._cases), self.eta, self._y,
                                    self._log_length, self.E, self.D, self._shift, self._w,
                                    self._n, self._ll_case, np.int32(residuals), self._r,
                                    self._q))
        return float(self._ll_case.sum())

    def loglik(self) -> float:
        return self._case_terms(False)

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        ll = self._case_terms(True)
        p = self._indptr_host.size - 1
        g = self.cp.zeros(p)
        if p:
            self._k["sccs_column_dots"]((p,), (THREADS,),
                                        (self._indptr, self._rows, self._vals, self._r, g))
        return ll, g.get()

    def _to_host(self):
        """r and p to the host backend's buffers, with the weights (for its kernels)."""
        ll = self._case_terms(True)
        h = self.host
        h._r[:], h._q[:] = self._r.get(), self._q.get()
        h.w = self._w.get()
        return ll, h._r, h._q

    def information(self, cols) -> tuple[float, np.ndarray, np.ndarray]:
        """As SccsCpuBackend.information, from r and p computed on the device."""
        ll, r, q = self._to_host()
        g, info = self.host.information_at(cols, r, q)
        return ll, g, info

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """The proximal-Newton step of SccsCpuBackend, its inner loop on the host."""
        ll, r, q = self._to_host()
        h = self.host
        delta, g = k.quadratic_cd(h._indptr, h._indices, h._values,
                                  np.asarray(coords, np.int64), h.case_of, h.D.size, r, q,
                                  h.w * h.n, np.asarray(beta, np.float64), lam1, lam2, tol,
                                  max_cycles)
        return ll, g, delta
