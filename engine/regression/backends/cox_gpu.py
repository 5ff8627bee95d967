"""The GPU backend: CuPy device arrays and the CUDA kernels of cuda/*.cu (Yang2022 sec. 2.7).

Same methods and numbers as CoxCpuBackend.  ModelData is uploaded once (CSC columns over the sorted
rows with int32 row positions, binary columns without values; weights; flags); eta and
D = w exp(eta - shift) live on the device, in buffers allocated once and rewritten in place
(set_beta, set_weights, re-centring), so a captured CUDA graph's pointers stay valid.  What runs
where:

- grad_hess(j): scatter_column (column j into a dense scratch), the fused kernel of Yang2022
  Fig. 2 (grad_hess_reduce -> grad_hess_carry -> grad_hess_tiles -> grad_hess_finish: a
  flag-value tuple scan, Yang2024 eq. 18, of (D, x D, x^2 D) and the tied events' sums, reduced
  to g and h in the same pass, Breslow or Efron), clear_column.  With entry times a segmented
  scan of the start-ordered tuple (gather_start_rows + segmented_scan.cu) is read at positions
  found once by searchsorted (cox_gpu_layout.late).  Custom kernels throughout; no cupy.cumsum.
- update(j, delta): update_coordinate (sparse, O(nnz_j), Yang2022 Fig. 3).
- cluster_scores: the score residuals of blocks of columns (cox_gpu_risk_set.score_residuals,
  the same scans) summed by cluster on the device: the middle of the robust variance.
- loglik / loglik_gradient / information / quadratic_step: the log-likelihood pass of
  cox_gpu_risk_set.py (CuPy element-wise work and gathers around the segmented_scan.cu kernels; the
  sums are CuPy reductions), X^T v by the CSC kernel column_dots.cu, the information matrix and
  the Gram matrix by cuSPARSE products (cupyx.scipy.sparse) and one dense matmul.
- quadratic_step: the Gram matrix of the chosen columns on the device and coordinate descent on
  the small s x s system on the host (the CPU's diagonal_step.gram_solve, after the CPU's secant
  correction in float64: diagonal_step.Secant); more than 2,000
  columns: the CPU's column-wise quadratic_cd on the host copy of X with v and h downloaded;
  then, in float64, the CPU's plane step (cox_subspace) with its eta-space directions on the device and
  their curvature by segmented scans (cox_gpu_risk_set.direction_curvature).
- ccd_cycle: the papers' CCD cycle with nothing crossing to the host per coordinate: per
  coordinate the fused kernel leaves (g, h) on the device, ccd_step.cu (the conditional kernel of
  Yang2022 Fig. 3) takes the trust-region Newton step with the prior exactly as
  engine/regression/solvers/ccd.py and update_coordinate applies it only when non-zero.  beta, widths and
  frozen flags go up and come back once per cycle.  Within a cycle the shift of exp(eta - shift)
  stays fixed; a re-centre flagged by the update kernel is applied at the cycle's end.  The
  cycle's ~8 P launches are captured once into a CUDA graph and replayed with one launch per
  cycle (graphs=False, or entry times, launch them one by one; cycle_mode says which ran).

Precision: float64 by default; ``dtype=np.float32`` compiles the kernels with
-DSURVSCAN_REAL=float (eta, D, the scans and their reductions in float32; beta and the CCD step
stay float64).  Its rounding, measured with the NumPy emulation of the same kernels
(tests/support/gpu_reference.py: the kernels' tiles and order of additions, in float32, against the
float64 Numba kernel; tests/engine/regression/backends/test_gpu_reference.py): largest relative error over coordinates of
h about 1e-7 to 6e-7 and of g 1e-6 to 2e-6 on rossi, Stanford heart and K = N/2 strata, and of
g about 3e-5 at N = 100,000 (K = 1 and K = 50,000; g relative to max(|g|, 1e-3 h), since g is a
difference of large sums that vanishes at the optimum).  Whole fits, engine.fit(precision=
"float32") (tol raised to 1e-6, below which single precision cannot settle), run through the
kernels on the CPU emulator (rossi, Stanford heart, 20,000 x 50, K = N/2; unpenalised and L1;
auto and ccd; tests/engine/regression/backends/test_gpu_backend.py): coefficients within 1e-7 to 2e-4 of max |beta| of the
float64 fit (the largest with solver="auto", which stops earlier at the looser tol), standard
errors within 1.2e-5 relative, log-likelihood within about 1e-7 relative.  A GPU rounds a little
differently (nvcc fuses multiply-adds); the order of additions is the same.  float32 is for
screening many models, not for reported estimates.

Verification status: on an H100 (sessions 7 and 10, bench/results/gpu_h100/README.md) every
gpu-marked test passed (163), GPU = CPU to 1e-8 in float64; what only the device showed is kept
by tests (a host-only macro NVRTC lacks, cuSPARSE's SpGEMM out of resources, the float32 line
search below the sums' rounding: models.base.BackendModel.rounding).  Every .cu source compiles with nvcc
(tests/engine/regression/backends/test_gpu_kernels_compile.py, float64 and float32).  tests/engine/regression/backends/test_gpu_backend.py compares
this class with CoxCpuBackend twice: on a device (marked gpu, skipped without one) and, everywhere,
unchanged on the CPU emulator of tests/support/cuda_emulator (the kernel sources built by g++, a block's
threads as fibers with real barriers, arguments checked against the C types, device arrays that
refuse implicit conversion, as CuPy's do); tests/engine/regression/backends/test_cuda_emulator.py runs the kernels over
more than 256 tiles, in three thread orders to expose races, and under AddressSanitizer to
catch any access outside an array (memcheck's job on a device); the compile test has ptxas
check that every kernel's registers and shared memory fit a 256-thread block.  The scan's tiling and the
float32 rounding are also pinned by NumPy references (tests/engine/regression/backends/test_gpu_reference.py).
"""
from __future__ import annotations

import functools
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from . import diagonal_step_kernels as k
from .cox_gpu_layout import event_groups, layout
from .cox_gpu_risk_set import (dense_columns, direction_curvature, hazard_increments,
                               information_matrix, risk_set_pass, score_residuals,
                               weighted_gram)
from .cox_subspace import PlaneStep
from .diagonal_step import Secant, gram_solve
from .hazard_state import RESHIFT
from ...core.device import cupy_on_device, cupy_or_error
from ..modeldata import ModelData
from ..row_flags import EVENT, HEAD

CUDA_DIR = Path(__file__).with_name("cuda")
SOURCES = ("segmented_scan.cu", "coordinate_grad_hess.cu", "sparse_update.cu",
           "column_dots.cu", "ccd_step.cu")
THREADS = 256           # SCAN_THREADS of flag_scan.cuh
TILE = 256 * 4          # SCAN_TILE
_GRAM_MAX = 2000
_GRID_Y = 65535         # CUDA's limit on gridDim.y: the columns one segmented-scan launch takes
_SCORE_BYTES = 2 ** 31  # cluster_scores' work arrays (about 12 of c x n) per block of columns


@functools.lru_cache(maxsize=None)
def _kernels(real: str) -> dict:
    """Every kernel of cuda/*.cu, compiled by NVRTC through cupy.RawModule for ``real``."""
    cupy = cupy_or_error()
    options = ("-std=c++17", f"-I{CUDA_DIR}", f"-DSURVSCAN_REAL={real}")
    out = {}
    for name in SOURCES:
        module = cupy.RawModule(code=(CUDA_DIR / name).read_text(), options=options)
        for fn in _ENTRY_POINTS[name]:
            out[fn] = module.get_function(fn)
    return out


_ENTRY_POINTS = {
    "segmented_scan.cu": ("segscan_reduce", "segscan_carry", "segscan_apply"),
    "coordinate_grad_hess.cu": ("grad_hess_reduce", "grad_hess_carry", "grad_hess_tiles",
                                "grad_hess_finish", "gather_start_rows"),
    "sparse_update.cu": ("scatter_column", "clear_column", "update_coordinate", "add_column"),
    "column_dots.cu": ("column_dots",),
    "ccd_step.cu": ("ccd_step",),
}


class CoxGpuBackend:
    """Risk-set scans on a CUDA device for one ModelData (see the module docstring)."""

    name = "gpu"
    # the CPU's plane correction of each proximal-Newton step (cox_subspace), its eta-space
    # vectors on the device; False gives the plain step.  float64 only: in float32 the
    # objective's rounding (1e-7) is near the stopping tol (1e-6), and the plane's longer
    # steps then stop early (the tests' heart fit: 5 steps and coefficients 5e-4 off the
    # float64 optimum, against 12 steps and 6e-6 with the plain step)
    plane_step = True

    def __init__(self, md: ModelData, efron: bool, dtype=np.float64, graphs: bool = True):
        cp = cupy_on_device(md.n)
        self.cp, self.md, self.efron = cp, md, bool(efron)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32, got {self.dtype}")
        self.has_start = md.start is not None
        _check_device_memory(cp, md, self.dtype.itemsize)
        self._k = _kernels("double" if self.dtype == np.float64 else "float")
        n, G = md.n, max(1, -(-md.n // TILE))
        self._G = G
        self._lay_host = layout(md)
        self._lay = replace(self._lay_host, **{f.name: _up(cp, getattr(self._lay_host, f.name))
                                               for f in fields(self._lay_host)})
        self._start_order = cp.asarray(md.start_order) if self.has_start else None
        self._late = self._lay.late if self.has_start else cp.zeros(1, np.int64)
        self._indptr = cp.asarray(md.indptr, np.int64)
        self._indices = cp.asarray(md.indices, np.int32)
        self._values = cp.asarray(md.values, self.dtype)
        self._vptr = cp.asarray(md.vptr, np.int64)
        self._xs = cp.zeros(n, self.dtype)
        # device state lives in buffers allocated once: a captured CUDA graph holds pointers
        self.eta, self.D = cp.zeros(n, self.dtype), cp.empty(n, self.dtype)
        self._w, self._wev = cp.empty(n, self.dtype), cp.empty(n, self.dtype)
        self._flags = cp.empty(n, np.uint8)
        self._shift = cp.zeros(1, np.float64)
        self.shift = 0.0
        self._agg_f, self._carry_f = cp.empty(G, np.uint8), cp.empty(G, np.uint8)
        self._agg_v, self._carry_v = cp.empty(8 * G, self.dtype), cp.empty(8 * G, self.dtype)
        self._partial = cp.empty(2 * G, self.dtype)
        self._gh = cp.zeros(2, self.dtype)
        self._start_in = cp.empty((3, n), self.dtype) if self.has_start else self._gh
        self._step = cp.zeros(1, np.float64)
        self._recentre_flag = cp.zeros(1, np.int32)
        self._flags_built = md.flags.copy()
        self._block_key, self._block, self._gram = None, None, None
        self._secant = Secant()     # the Gram matrix's correction (diagonal_step.SR1_MIN)
        self._block_cols = np.zeros(0, np.int64)
        self._cycle_state = None
        self.use_graphs = bool(graphs) and not self.has_start
        self.cycle_mode = "graph" if self.use_graphs else "launches"
        self._graphs, self._capture_stream = {}, None
        self.plane = PlaneStep(self._image, cp, cp.asnumpy)
        self._weight_states, self._clusters = [], None
        self.set_weights(md.weights)
        self.set_beta(np.zeros(md.p))

    # -- state ---------------------------------------------------------------------------
    def set_beta(self, beta: np.ndarray) -> None:
        """eta = X beta from scratch (``_image``); never eta + X step as the CPU's line search
        may: in float32 that sum's rounding drifts, and the plane step's u2 = eta - eta_prev
        would carry the drift (6e-4 off the optimum on the tests' K = N/2 case, 1e-7 from
        scratch)."""
        self.eta[...] = self._image(beta)
        self._recentre()

    def _image(self, x: np.ndarray):
        """X x on the device for a host coefficient vector: one sparse product with the
        working set's device block when x lives on it (the proximal-Newton steps: eta and the
        plane step's directions), else column by column (the CPU's order of additions)."""
        x = np.asarray(x)
        support = np.flatnonzero(x)
        if support.size and np.isin(support, self._block_cols).all():
            return self._block @ self.cp.asarray(x[self._block_cols], self.dtype)
        out = self.cp.zeros(self.md.n, self.dtype)
        for j in support:
            rows, vals, has_values, nnz = self._column(j)
            if nnz:
                self._k["add_column"]((_blocks(nnz),), (THREADS,),
                                      (rows, vals, has_values, nnz, np.float64(x[j]), out))
        return out

    def _recentre(self) -> None:
        self.shift = float(self.eta.max()) if self.eta.size else 0.0
        self._shift.fill(self.shift)
        self.cp.multiply(self._w, self.cp.exp(self.eta - self.dtype.type(self.shift)), out=self.D)
        self._recentre_flag.fill(0)

    def set_weights(self, w_sorted: np.ndarray) -> None:
        """As CoxCpuBackend.set_weights: a zero-weight event loses its EVENT flag.  The states
        of the two latest weight vectors are kept on the device: cross-validation switches
        between a fold's training weights and the full ones at every grid point, and building
        a state (the tie groups on the host, four uploads) took 0.1 s at 10^6 rows."""
        w = np.array(w_sorted, dtype=np.float64)
        state = next((s for s in self._weight_states if np.array_equal(s["weights"], w)), None)
        if state is None:
            state = self._weight_state(w)
            self._weight_states = [state, *self._weight_states][:2]
        self.md.weights, self.md.flags = state["weights"], state["flags"]
        self._flags[...] = state["lay_flags"]      # in place: captured graphs hold pointers
        self._w[...] = state["w"]
        self._wev[...] = state["wev"]
        self._groups = state["groups"]
        self.plane.reset()
        self._secant.reset()
        self._recentre()

    def _weight_state(self, w: np.ndarray) -> dict:
        """The host flags and the device arrays that follow from the weights ``w``."""
        cp = self.cp
        flags = np.where(w > 0, self._flags_built, self._flags_built & ~EVENT).astype(np.uint8)
        lay_flags = np.where(w > 0, self._lay_host.flags,
                             self._lay_host.flags & ~EVENT).astype(np.uint8)
        groups = event_groups(flags, w, self.efron)
        groups = replace(groups, **{f.name: _up(cp, getattr(groups, f.name))
                                    for f in fields(groups)})
        groups.term_c = groups.term_c.astype(self.dtype)
        groups.term_wt = groups.term_wt.astype(self.dtype)
        return {"weights": w, "flags": flags, "lay_flags": cp.asarray(lay_flags),
                "w": cp.asarray(w.astype(self.dtype)),
                "wev": cp.asarray(np.where((flags & EVENT) != 0, w, 0.0).astype(self.dtype)),
                "groups": groups}

    def update(self, j: int, delta: float) -> None:
        """beta_j += delta: the sparse update kernel; re-centre as the CPU does."""
        self._step.fill(delta)
        self._launch_update(j)
        if int(self._recentre_flag.get()[0]):
            self._recentre()

    def _launch_update(self, j):
        rows, vals, has_values, nnz = self._column(j)
        if nnz:
            self._k["update_coordinate"](
                (_blocks(nnz),), (THREADS,),
                (rows, vals, has_values, nnz, self._step, self.eta, self.D, self._w,
                 self._shift, np.float64(RESHIFT), self._recentre_flag))

    def _column(self, j):
        """Column j's device row positions and values (empty for binary), for the kernels."""
        md = self.md
        lo, hi, v0 = int(md.indptr[j]), int(md.indptr[j + 1]), int(md.vptr[j])
        vals = self._values[v0:v0 + hi - lo] if v0 >= 0 else self._values[:0]
        return self._indices[lo:hi], vals, np.int32(v0 >= 0), np.int64(hi - lo)

    # -- scans ---------------------------------------------------------------------------
    def grad_hess(self, j: int) -> tuple[float, float]:
        """dl/dbeta_j and -d2l/dbeta_j^2: the fused kernel, two scalars back."""
        self._grad_hess_on_device(j)
        g, h = self._gh.get()
        return float(g), float(h)

    def _grad_hess_on_device(self, j):
        """Leave (g, h) of coordinate j in self._gh (Yang2022 Fig. 2); no host sync."""
        n, G, kern = np.int64(self.md.n), np.int64(self._G), self._k
        rows, vals, has_values, nnz = self._column(j)
        if nnz:
            kern["scatter_column"]((_blocks(nnz),), (THREADS,),
                                   (rows, vals, has_values, nnz, self._xs))
        start_sums = self._gh
        if self.has_start:
            kern["gather_start_rows"]((_blocks(n),), (THREADS,),
                                      (self._start_order, self.D, self._xs, n, self._start_in))
            start_sums = self.scan(self._start_in, self._lay.start_heads, HEAD, False)
        kern["grad_hess_reduce"]((self._G,), (THREADS,),
                                 (self.D, self._xs, self._w, self._flags, n, self._agg_f,
                                  self._agg_v))
        kern["grad_hess_carry"]((1,), (THREADS,),
                                (self._agg_f, self._agg_v, G, self._carry_f, self._carry_v))
        kern["grad_hess_tiles"]((self._G,), (THREADS,),
                                (self.D, self._xs, self._w, self._flags, n, self._carry_f,
                                 self._carry_v, np.int32(self.efron), np.int32(self.has_start),
                                 start_sums, self._late, self._partial))
        kern["grad_hess_finish"]((1,), (THREADS,), (self._partial, G, self._gh))
        if nnz:
            kern["clear_column"]((_blocks(nnz),), (THREADS,), (rows, nnz, self._xs))

    def scan(self, cols, flags, bit, reverse):
        """Inclusive segmented sums of the rows of cols (c x n), segments starting where
        flags & bit (reverse: read from the end, suffix sums): segmented_scan.cu."""
        cp = self.cp
        cols = cp.ascontiguousarray(cols, dtype=self.dtype)
        c, n = cols.shape
        out = cp.empty_like(cols)
        if n == 0 or c == 0:
            return out
        if c > _GRID_Y:
            for a in range(0, c, _GRID_Y):
                out[a:a + _GRID_Y] = self.scan(cols[a:a + _GRID_Y], flags, bit, reverse)
            return out
        G = -(-n // TILE)
        agg_f, carry_f = cp.empty((c, G), np.uint8), cp.empty((c, G), np.uint8)
        agg_v, carry_v = cp.empty((c, G), self.dtype), cp.empty((c, G), self.dtype)
        args = (cols, flags, np.int32(bit), np.int64(n), np.int32(reverse))
        self._k["segscan_reduce"]((G, c), (THREADS,), args + (agg_f, agg_v))
        self._k["segscan_carry"]((1, c), (THREADS,), (agg_f, agg_v, np.int64(G), carry_f,
                                                      carry_v))
        self._k["segscan_apply"]((G, c), (THREADS,), args + (carry_f, carry_v, out))
        return out

    def _pass(self, want: int):
        return risk_set_pass(self.cp, self.scan, self._lay, self._groups, self.eta, self.D,
                             self._w, self._flags, self.shift, self._start_order, want)

    def loglik(self) -> float:
        """Log partial likelihood at the current beta."""
        return self._pass(0)[0]

    def loglik_gradient(self) -> tuple[float, np.ndarray]:
        """Log partial likelihood and its full gradient: X^T (w e - r) by column_dots.cu."""
        ll, r, _ = self._pass(1)
        return ll, self._column_dots(self._wev - r)

    def _column_dots(self, v):
        out = self.cp.empty(self.md.p, self.dtype)
        if self.md.p:
            self._k["column_dots"]((self.md.p,), (THREADS,),
                                   (self._indptr, self._indices, self._values, self._vptr,
                                    self.cp.ascontiguousarray(v, self.dtype), out))
        return out.get().astype(np.float64)

    def information(self, cols: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log-likelihood, gradient and observed information over columns ``cols``."""
        cols = np.asarray(cols, np.int64)
        ll, r, _ = self._pass(1)
        Xs = self._device_block(cols)
        g = Xs.T @ (self._wev - r)
        info = information_matrix(self.cp, self.scan, self._lay, self._groups, Xs, r, self.D,
                                  self._flags, self._start_order)
        return ll, g.get().astype(np.float64), info.get().astype(np.float64)

    def column_products(self, V) -> np.ndarray:
        """X^T v for each row v of V (G x n over the sorted rows, host or device): (G, p) on
        the host, by column_dots.cu (the risk-weighted sums of the baseline's Q)."""
        V = self.cp.asarray(V, self.dtype)
        return np.stack([self._column_dots(v) for v in V]) if len(V) else np.zeros((0, self.md.p))

    def hazard_increments(self, beta: np.ndarray, offset: float):
        """The baseline hazard's pieces at ``beta`` over the current weights (engine.
        regression.baseline), relative risks centred at ``offset`` (c' beta): the last sorted
        row of each tie group with events and a (6, groups) host array dH, dV, e, own,
        n_event, n_risk (cox_gpu_risk_set.hazard_increments rescaled from the device's
        exp(eta - shift)), and on the device r = w exp(eta - offset) and the event flags of
        the sorted rows."""
        self.set_beta(beta)
        inc = hazard_increments(self.cp, self.scan, self._lay, self._groups, self.D, self._w,
                                self._flags, self._start_order).get().astype(np.float64)
        q = np.exp(self.shift - offset)          # r = D q
        inc[:4] /= np.array([q, q * q, q * q, q])[:, None]
        event = (self._flags & EVENT) != 0
        return self._groups.ends.get(), inc, self.D * q, event

    def cluster_scores(self, cols, codes: np.ndarray, n_clusters: int):
        """(len(cols), n_clusters) on the device: the cluster sums of the weighted score
        residuals of each column in ``cols`` at the current beta (``codes``: cluster of each
        sorted row), as CoxCpuBackend's, by the scans of score_residuals over dense blocks of
        columns of about _SCORE_BYTES of work arrays."""
        cols = np.asarray(cols, np.int64)
        _, r, _ = self._pass(1)
        out = self.cp.empty((cols.size, n_clusters), self.dtype)
        step = max(1, int(_SCORE_BYTES // (96 * max(self.md.n, 1))))
        for a in range(0, cols.size, step):
            X = dense_columns(self.cp, self._device_block(cols[a:a + step]), 0,
                              min(step, cols.size - a))
            U = score_residuals(self.cp, self.scan, self._lay, self._groups, X, r, self.D,
                                self._w, self._flags, self._start_order)
            out[a:a + step] = self._cluster_sums(U, np.asarray(codes, np.int64), n_clusters)
        return out

    def _cluster_sums(self, U, codes, n_clusters):
        """The columns of U (c x n, sorted rows) summed by cluster: the rows grouped by code
        (a host sort, kept for the next call with the same codes) and one segmented scan read
        at each group's last row.  When every row is its own cluster (codes 0..n-1, one
        each, as engine.regression.variance.cluster_codes gives) a scatter alone: the sort
        took 2 s of the robust SE at 10^7 rows on an H100."""
        cp = self.cp
        out = cp.zeros((U.shape[0], n_clusters), self.dtype)
        if n_clusters == codes.size:
            out[:, cp.asarray(codes)] = U
            return out
        if self._clusters is None or not np.array_equal(self._clusters["codes"], codes):
            order = np.argsort(codes, kind="stable")
            grouped = codes[order]
            heads = np.ones(codes.size, bool)
            heads[1:] = grouped[1:] != grouped[:-1]
            tails = np.flatnonzero(np.append(heads[1:], True))
            self._clusters = {"codes": codes.copy(), "order": cp.asarray(order),
                              "heads": cp.asarray(np.where(heads, HEAD, 0).astype(np.uint8)),
                              "tails": cp.asarray(tails), "at": cp.asarray(grouped[tails])}
        c = self._clusters
        out[:, c["at"]] = self.scan(U[:, c["order"]], c["heads"], HEAD, False)[:, c["tails"]]
        return out

    def quadratic_step(self, coords, beta, lam1, lam2, tol, max_cycles, fresh=True):
        """As CoxCpuBackend.quadratic_step: the centred Gram matrix of ``coords`` built on the
        device, coordinate descent on the s x s system on the host (gram_solve); above
        2,000 columns the column-wise quadratic_cd on the host with v and h downloaded."""
        md = self.md
        coords = np.asarray(coords, np.int64)
        ll, r, h = self._pass(2)
        v = self._wev - r
        g, delta, u = np.zeros(md.p), np.zeros(md.p), None
        if coords.size > _GRAM_MAX:
            delta, g = k.quadratic_cd(md.indptr, md.indices, md.values, md.vptr, coords,
                                      v.get().astype(np.float64), h.get().astype(np.float64),
                                      beta, lam1, lam2, tol, max_cycles)
        elif coords.size:
            Xs = self._gram_block(coords)
            if fresh or self._gram is None:
                xh = Xs.T @ h
                total = float(h.sum())
                Q = weighted_gram(self.cp, Xs, h)
                if total > 0:
                    Q -= self.cp.outer(xh, xh) / total
                self._gram = Q.get().astype(np.float64)
            gs = (Xs.T @ v).get().astype(np.float64)
            if self.dtype == np.float64:
                self._gram = self._secant.corrected(self._gram, coords, beta, gs)
            delta[coords] = gram_solve(self._gram, gs, beta[coords], lam1[coords],
                                       lam2[coords], tol, max_cycles)
            g[coords] = gs
            u = Xs @ self.cp.asarray(delta[coords], self.dtype)
        if self.plane_step and self.dtype == np.float64 and coords.size:
            delta, _ = self.plane.step(self.eta, v, lambda U: self.direction_curvature(U, r),
                                       coords, beta, delta, u, lam1, lam2)
        return ll, g, delta

    def direction_curvature(self, U, r=None) -> np.ndarray:
        """-d2l along the eta-space directions in the rows of U (m x n) at the current beta
        (``r``: its risk-set terms when the caller has them), m x m on the host."""
        if r is None:
            r = self._pass(1)[1]
        U = self.cp.asarray(U, self.dtype)
        C = direction_curvature(self.cp, self.scan, self._lay, self._groups, U, r, self.D,
                                self._flags, self._start_order)
        return C.get().astype(np.float64)

    def _gram_block(self, coords):
        key = coords.tobytes()
        if self._block_key != key:
            self._block_key, self._block, self._gram = key, self._device_block(coords), None
            self._block_cols = coords.copy()
        return self._block

    def _device_block(self, cols):
        """The chosen columns as a device CSC matrix over the sorted rows, gathered on the
        device from the columns uploaded once (ModelData.block's gather there: on the host,
        with its upload, it took 0.24 s of a 0.8 s fit at 10^6 rows on an H100)."""
        from cupyx.scipy import sparse
        cp, md = self.cp, self.md
        cols = np.asarray(cols, np.int64)
        lo = md.indptr[cols]
        ptr = np.concatenate(([0], np.cumsum(md.indptr[cols + 1] - lo))).astype(np.int64)
        total = int(ptr[-1])
        ptr_d = cp.asarray(ptr)
        at = cp.arange(total, dtype=np.int64)
        which = cp.searchsorted(ptr_d[1:], at, side="right")     # each non-zero's block column
        offset = at - ptr_d[which]
        rows = self._indices[cp.asarray(lo)[which] + offset]
        v0 = cp.asarray(md.vptr[cols])[which]
        vals = cp.ones(total, self.dtype)
        if md.values.size:
            valued = v0 >= 0
            vals = cp.where(valued, self._values[cp.where(valued, v0 + offset, 0)], vals)
        block = sparse.csc_matrix((vals, rows, cp.asarray(ptr, np.int32)),
                                  shape=(md.n, cols.size))
        # ModelData's columns hold ascending rows without repeats (from a canonical Cohort.X):
        # saying so spares cupyx a check (a kernel and a host sync) before each product and
        # conversion, 2,600 of them in a 40-variant grid at 10^6 rows
        block.has_canonical_format = True
        return block

    # -- the papers' CCD on the device ---------------------------------------------------------
    def ccd_cycle(self, state, coords, diverged: float, scale: np.ndarray,
                  flat: float = 0.0) -> float:
        """One CCD cycle over ``coords`` (Yang2022 Fig. 3): per coordinate the fused kernel,
        the conditional step kernel and the sparse update, launched back to back with no host
        round trip; state.beta, width and frozen are updated in place at the end.  Returns the
        cycle's largest relative step, as engine/regression/solvers/ccd.py's loop does
        (``diverged`` and ``flat``: its divergence test, solvers/state.py diverging).

        The cycle's launches (about 8 per coordinate) are captured once into a CUDA graph and
        replayed, one launch per cycle instead of P x 8 from Python (Yang2022 sec. 2.7); the
        graph is kept per set of active coordinates.  Without entry times only (their scan
        allocates); if capture fails the launches run one by one and ``cycle_mode`` says so."""
        cs = self._cycle_buffers(state, scale)
        cs["flat"].fill(flat)
        active = np.array([j for j in coords if not state.frozen[j]], np.int64)
        diverged = np.float64(diverged)
        graph = self._cycle_graph(active, diverged) if self.use_graphs else None
        if graph is not None:
            graph.launch()
        else:
            self._cycle_launches(active, diverged)
        state.beta[:] = cs["beta"].get()
        state.width[:] = cs["width"].get()
        state.frozen[:] = cs["frozen"].get().astype(bool)
        if int(self._recentre_flag.get()[0]):
            self._recentre()
        return float(cs["biggest"].get()[0])

    def _cycle_buffers(self, state, scale) -> dict:
        """The solver state on the device, in buffers kept between cycles (graph pointers)."""
        p = self.md.p
        if self._cycle_state is None:
            self._cycle_state = {name: self.cp.zeros(p, np.float64)
                                 for name in ("beta", "width", "lam1", "lam2", "scale")}
            self._cycle_state["frozen"] = self.cp.zeros(p, np.uint8)
            self._cycle_state["biggest"] = self.cp.zeros(1, np.float64)
            self._cycle_state["flat"] = self.cp.zeros(1, np.float64)
        cs = self._cycle_state
        for name, host in (("beta", state.beta), ("width", state.width), ("lam1", state.lam1),
                           ("lam2", state.lam2), ("scale", scale)):
            cs[name].set(np.ascontiguousarray(host, np.float64))
        cs["frozen"].set(state.frozen.astype(np.uint8))
        cs["biggest"].fill(0)
        return cs

    def _cycle_launches(self, active, diverged) -> None:
        cs = self._cycle_state
        for j in active:
            self._grad_hess_on_device(j)
            self._k["ccd_step"]((1,), (1,), (np.int64(j), self._gh, cs["beta"], cs["width"],
                                             cs["lam1"], cs["lam2"], cs["frozen"], cs["scale"],
                                             diverged, cs["flat"], self._step,
                                             cs["biggest"]))
            self._launch_update(j)

    def _cycle_graph(self, active, diverged):
        """The cycle over ``active`` as a CUDA graph (captured on first use), or None."""
        key = (active.tobytes(), float(diverged))
        if key in self._graphs:
            return self._graphs[key]
        cp = self.cp
        if self._capture_stream is None:
            self._capture_stream = cp.cuda.Stream(non_blocking=True)
        stream = self._capture_stream
        try:
            with stream:
                stream.begin_capture()
                try:
                    self._cycle_launches(active, diverged)
                finally:
                    graph = stream.end_capture()
        except Exception as err:    # a driver or CuPy without capture: launch one by one
            self.use_graphs = False
            self.cycle_mode = f"launches (graph capture failed: {type(err).__name__}: {err})"
            return None
        if len(self._graphs) >= 8:
            self._graphs.clear()
        self._graphs[key] = graph
        return graph


def device_bytes(md: ModelData, itemsize: int) -> int:
    """About what CoxGpuBackend holds on the device for ``md`` at its peak: the CSC columns, the
    per-row state and index arrays, and the log-likelihood pass's scans and temporaries."""
    per_row = 60 + 20 * itemsize + (25 + 3 * itemsize if md.start is not None else 0)
    return int(md.indices.size * 4 + md.values.size * itemsize + 16 * (md.p + 1) + md.n * per_row)


def _check_device_memory(cp, md, itemsize) -> None:
    """A clear error instead of CuPy's OutOfMemoryError halfway through the upload."""
    need = device_bytes(md, itemsize)
    free, total = cp.cuda.runtime.memGetInfo()
    if need > free:
        raise ValueError(
            f"backend='gpu': this cohort ({md.n:,} rows, {md.p:,} covariates, "
            f"{md.indices.size:,} non-zeros) needs about {need / 2**30:.1f} GiB on the device, "
            f"which has {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB. Use "
            "backend='cpu'" + (", precision='float32'" if itemsize == 8 else "")
            + " or fewer covariates.")


def _up(cp, a):
    return None if a is None else cp.asarray(a)


def _blocks(count) -> int:
    return max(1, -(-int(count) // THREADS))
