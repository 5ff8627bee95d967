"""The GPU backend of the Fine-Gray pseudo-likelihood: the forward and backward scans of
fine_gray_kernels as segmented scans on the device (cuda/segmented_scan.cu through
CoxGpuBackend.scan), the pattern of cox_gpu_risk_set.py.

Same methods and numbers as FineGrayCpuBackend.  The state (eta, D = w exp(eta - shift), the
sparse update and its re-centring) is a Breslow CoxGpuBackend's over the same sorted rows; this
class adds Fine-Gray's risk sets (Yang2022 sec. 2.2, eqs 18-20).  With S_pre the prefix sums
within a stratum (segments at HEAD) and S_suf the sums over the rows after a row in its stratum
(an exclusive suffix: the input shifted by one row, scanned backward from STRATUM_TAIL, so every
sum holds only its own terms, as on the CPU), at each tie group end g

    den_g = S_pre[D](g) + Gt_g S_suf[omega D](g),   W_g = the group's summed event weights,

- loglik: sum w e eta - sum_g W_g (log den_g + shift);
- r and h: A, Gam (suffix sums of alpha_g = W_g/den_g and gamma_g = alpha_g/den_g) and B, Gam2
  (exclusive prefix sums of alpha_g Gt_g and gamma_g Gt_g^2), r = D (A + omega B),
  h = r - D^2 (Gam + omega^2 Gam2); the gradient X^T (w e - r) by cuda/column_dots.cu;
- grad_hess(j): the prefix sums of (D, x D, x^2 D) and the suffix sums of omega (D, x D, x^2 D),
  two scans of three rows each, reduced at the group ends (eqs 19-20): O(N) per coordinate, as
  on the CPU;
- quadratic_step: r and h come to the host for the shared inner solve (HazardState);
  information and sandwich: eta, D and the shift are downloaded into the host backend, whose
  kernels build the s x s matrices (the variance runs once per fit).

Verification: this class runs unchanged on the CUDA emulator of tests/support/cuda_emulator against
FineGrayCpuBackend to 1e-8 per method and per fit (tests/engine/regression/backends/test_fine_gray_gpu.py,
tests/engine/regression/test_contract.py).  It has not run on a device.
"""
from __future__ import annotations

import functools

import numpy as np

from .cox_gpu import CUDA_DIR, THREADS, CoxGpuBackend
from .cox_gpu_layout import layout
from .fine_gray_cpu import FineGrayCpuBackend
from ...core.device import cupy_or_error
from ..modeldata import ModelData
from ..row_flags import EVENT, GROUP_END, GROUP_HEAD, HEAD, STRATUM_TAIL


@functools.lru_cache(maxsize=None)
def _column_dots():
    """cuda/column_dots.cu compiled by NVRTC (float64)."""
    cupy = cupy_or_error()
    module = cupy.RawModule(code=(CUDA_DIR / "column_dots.cu").read_text(),
                            options=("-std=c++17", f"-I{CUDA_DIR}", "-DSURVSCAN_REAL=double"))
    return module.get_function("column_dots")


class FineGrayGpuBackend:
    """Fine-Gray scans on a CUDA device (see the module docstring; parameters as
    FineGrayCpuBackend)."""

    name = "gpu"

    def __init__(self, md: ModelData, omega: np.ndarray, gl: np.ndarray, censored: np.ndarray,
                 by_stratum: bool, events_first: bool = False):
        self.host = FineGrayCpuBackend(md, omega, gl, censored, by_stratum, events_first)
        self.state = CoxGpuBackend(md, efron=False, graphs=False)     # eta, D, shift, scan
        cp = self.cp = cupy_or_error()
        self.md = md
        self._dots = _column_dots()
        flags = layout(md).flags
        self._flags = cp.asarray(flags)
        self._head = cp.asarray((flags & HEAD) != 0)
        self._tail = cp.asarray((flags & STRATUM_TAIL) != 0)
        self._ends = cp.asarray(np.flatnonzero(flags & GROUP_END))
        self._indptr = cp.asarray(md.indptr, np.int64)
        self._indices = cp.asarray(md.indices, np.int32)
        self._values = cp.asarray(md.values, np.float64)
        self._vptr = cp.asarray(md.vptr, np.int64)
        self.set_censoring(omega, gl)
        self.set_weights(md.weights)

    @property
    def omega(self) -> np.ndarray:
        return self.host.omega

    @property
    def gl(self) -> np.ndarray:
        return self.host.gl

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        self.state.set_beta(beta)

    def set_weights(self, w_sorted: np.ndarray) -> None:
        """New case weights (sorted order); a zero-weight event loses its EVENT flag."""
        self.state.set_weights(w_sorted)
        self.host.set_weights(w_sorted)
        md, cp = self.md, self.cp
        self._wev = cp.asarray(np.where((md.flags & EVENT) != 0, md.weights, 0.0))
        W = self.state.scan(self._wev[None], self._flags, GROUP_HEAD, False)[0]
        self._W = W[self._ends]

    def update(self, j: int, delta: float) -> None:
        self.state.update(j, delta)

    def set_censoring(self, omega: np.ndarray, gl: np.ndarray) -> None:
        """New censoring weights (sorted order), after the case weights changed."""
        self.host.set_censoring(omega, gl)
        self._omega = self.cp.asarray(self.host.omega)
        self._gl_ends = self.cp.asarray(self.host.gl)[self._ends]

    # -- scans ---------------------------------------------------------------------------
    def _prefix(self, v):
        """Sums of the rows of v (c x n) up to each row within its stratum."""
        return self.state.scan(v, self._flags, HEAD, False)

    def _exclusive_prefix(self, v):
        """Sums of the rows of v before each row within its stratum."""
        shifted = self.cp.zeros_like(v)
        shifted[:, 1:] = v[:, :-1]
        return self._prefix(self.cp.where(self._head, 0.0, shifted))

    def _suffix(self, v):
        """Sums of the rows of v from each row to its stratum's end."""
        return self.state.scan(v, self._flags, STRATUM_TAIL, True)

    def _exclusive_suffix(self, v):
        """Sums of the rows of v after each row within its stratum."""
        shifted = self.cp.zeros_like(v)
        shifted[:, :-1] = v[:, 1:]
        return self._suffix(self.cp.where(self._tail, 0.0, shifted))

    def _den(self, R0, suf0):
        """den_g at the group ends with events (1 where none: those terms are dropped)."""
        has = self._W > 0
        return has, self.cp.where(has, R0 + self._gl_ends * suf0, 1.0)

    def risk_set_pass(self, want: int):
        """(ll, r, h) as FineGrayCpuBackend.risk_set_pass, on the device (r and h device
        arrays, empty unless ``want`` >= 1, 2)."""
        cp, s, ends = self.cp, self.state, self._ends
        D = s.D
        suf = self._exclusive_suffix((self._omega * D)[None])[0][ends]
        has, den = self._den(self._prefix(D[None])[0][ends], suf)
        W = self._W
        ll = float(cp.sum(self._wev * s.eta)
                   - cp.sum(cp.where(has, W * (cp.log(den) + s.shift), 0.0)))
        empty = cp.empty(0)
        if want < 1:
            return ll, empty, empty
        n, gt = D.size, self._gl_ends
        alpha = cp.where(has, W / den, 0.0)
        gamma = alpha / den
        per_group = cp.zeros((2, n))
        per_group[:, ends] = cp.stack((alpha, gamma))
        A, Gm = self._suffix(per_group)
        per_group[:, ends] = cp.stack((alpha * gt, gamma * gt * gt))
        B, G2 = self._exclusive_prefix(per_group)
        om = self._omega
        r = D * (A + om * B)
        h = r - D * D * (Gm + om * om * G2) if want >= 2 else empty
        return ll, r, h

    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2 (eqs 19-20): two segmented scans of three rows."""
        cp, md, s, ends = self.cp, self.md, self.state, self._ends
        lo, hi, v0 = int(md.indptr[j]), int(md.indptr[j + 1]), int(md.vptr[j])
        x = cp.zeros(md.n)
        x[self._indices[lo:hi]] = self._values[v0:v0 + hi - lo] if v0 >= 0 else 1.0
        D = s.D
        xd = x * D
        od = self._omega * D
        T = self._exclusive_suffix(cp.stack((od, x * od, x * x * od)))[:, ends]
        R = self._prefix(cp.stack((D, xd, x * xd)))[:, ends]
        has, den = self._den(R[0], T[0])
        gt = self._gl_ends
        m1 = (R[1] + gt * T[1]) / den
        m2 = (R[2] + gt * T[2]) / den
        W = cp.where(has, self._W, 0.0)
        g = cp.sum(self._wev * x) - cp.sum(W * m1)
        h = cp.sum(W * (m2 - m1 * m1))
        return float(g), float(h)

    def loglik(self) -> float:
        """Log pseudo-likelihood at the current beta."""
        return self.risk_set_pass(0)[0]

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        ll, r, _ = self.risk_set_pass(1)
        g = self.cp.zeros(self.md.p)
        if self.md.p:
            self._dots((self.md.p,), (THREADS,),
                       (self._indptr, self._indices, self._values, self._vptr, self._wev - r,
                        g))
        return ll, g.get()

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """The proximal-Newton step: the pass on the device, the inner solve on the host."""
        ll, r, h = self.risk_set_pass(2)
        return self.host.state.quadratic_step(ll, r.get(), h.get(), coords, beta, lam1, lam2,
                                              tol, max_cycles, fresh)

    def _to_host(self) -> FineGrayCpuBackend:
        """The host backend at the device's eta, D and shift."""
        s, hs = self.state, self.host.state
        hs.eta, hs.D, hs.shift = s.eta.get(), s.D.get(), s.shift
        return self.host

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """As FineGrayCpuBackend.information, at the device's state (on the host)."""
        return self._to_host().information(cols)

    def sandwich(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As FineGrayCpuBackend.sandwich, at the device's state (on the host)."""
        return self._to_host().sandwich(cols)
