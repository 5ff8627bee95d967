"""The horseshoe probit Gibbs sampler on a CUDA device (CuPy): the paper's data-parallel
iteration (Terenin, Dong & Draper 2019, sec. 5), with the CPU sampler's numbers.

Per iteration, everything on the device and nothing to the host but the kept draws:

- ``scales`` (cuda/horseshoe_probit.cu, one block): lambda^-2, tau^-2, nu^-1, xi^-1 and the
  prior precision d = tau^-2 lambda^-2;
- ``precision_matrix`` Q = X'X + diag(d) (X'X formed once by GEMM), then cuSOLVER's Cholesky
  (cupy.linalg.cholesky);
- ``latent_pass``: mu = X beta, z (the two-branch truncated normal) and the partial sums of
  X'z and z'z in one read of X (a persistent grid of tiles of rows, as latent_pass.py on the
  CPU), then ``latent_sum`` adds the blocks' partials in a fixed order (X'z, z'z in double);
  its memory traffic is X once (4 GB at N = 10^6, p = 1,000 in float32; GEMV, the z kernel
  and GEMV read it twice) plus z (8N bytes) and the partials (8p bytes a block);
- ``normals`` s, h = L^-1 X'z, the marginal augmentation's scale g (``expansion``, from
  z'z - h'h; expansion.py), then beta = L^-T (g h + s) by two cuBLAS triangular solves.

The random numbers come from cuda/philox.cuh, the same Philox4x64-10 streams as philox.py, so a
chain is the CPU's chain draw for draw (to rounding: the sums run in another order). In float32
X, X'X, the factor and the solves are single precision, as the paper's; z, x_i beta, X'z and z'z
are double.
p > N (the BCM draw) is CPU-only.
"""
import functools
import time
from pathlib import Path

import numpy as np

from ..core.device import cupy_on_device
from ..core.errors import Cancelled
from .latent_launch import LatentLaunch

CUDA_DIR = Path(__file__).with_name("cuda")
SOURCE = CUDA_DIR / "horseshoe_probit.cu"
ENTRY_POINTS = ("latent_z", "latent_pass", "latent_sum", "scales", "precision_matrix",
                "normals", "expansion")
THREADS = 256                  # SCALE_THREADS of horseshoe_probit.cu
GRAM_ROWS = 65536              # rows a GEMM of X'X takes at a time (float64 copies)
STEP_BETA = 3                  # rng.STEP_BETA


def compile_options(real, launch):
    """NVRTC's (and nvcc's) options for one real type and one latent_pass launch."""
    return ("-std=c++17", f"-I{CUDA_DIR}", f"-DSURVSCAN_REAL={real}", *launch.options())


@functools.lru_cache(maxsize=None)
def _kernels(cupy, real, launch=LatentLaunch.for_columns(THREADS, 8)):
    """The kernels of horseshoe_probit.cu for one CuPy module (a device, or the tests' CPU
    emulator), one real type and one latent_pass launch (latent_launch.py), compiled by NVRTC."""
    options = compile_options(real, launch)
    module = cupy.RawModule(code=SOURCE.read_text(), options=options)
    return {name: module.get_function(name) for name in ENTRY_POINTS}


def _blocks(count):
    return (max(1, -(-int(count) // THREADS)),)


class LatentStep:
    """z | beta, X'z and z'z in one read of X (latent_pass, then latent_sum adds the blocks'
    partials): z (N,) and Xtz (p,) double buffers on the device, z'z into ``zz[0]``.
    ``launch``: latent_launch.LatentLaunch (default: for X's columns); ``blocks``: the grid
    (default: the launch's persistent grid on this device)."""

    def __init__(self, cp, X, sign, launch=None, blocks=None):
        n, p = X.shape
        self.launch = launch or LatentLaunch.for_columns(p, X.dtype.itemsize)
        self.k = _kernels(cp, "double" if X.dtype == np.float64 else "float", self.launch)
        self.blocks = blocks or self.launch.grid(cp, n)
        self.X, self.sign, self.n, self.p = X, sign, n, p
        self.z, self.Xtz = cp.empty(n), cp.empty(p)
        self.partial_Xtz, self.partial_zz = cp.empty((self.blocks, p)), cp.empty(self.blocks)

    def __call__(self, beta, key, iteration, zz):
        """The z step of ``iteration`` for one chain's Philox key (k0, k1); beta double."""
        n, p = np.int64(self.n), np.int64(self.p)
        self.k["latent_pass"]((self.blocks,), (self.launch.threads,),
                              (n, p, self.X, beta, self.sign, *key, iteration, self.z,
                               self.partial_Xtz, self.partial_zz))
        self.k["latent_sum"](_blocks(self.p + 1), (THREADS,),
                             (p, np.int32(self.blocks), self.partial_Xtz, self.partial_zz,
                              self.Xtz, zz))


class HorseshoeProbitGpu:
    """The sampler on one design held on the device (parameters as HorseshoeProbit; X and y
    may be NumPy arrays or already CuPy arrays)."""

    def __init__(self, X, y, shrunk, fixed_sd=10.0, prior="horseshoe", precision="float64",
                 expansion=True):
        cp = cupy_on_device(instead="backend='cpu'")
        n, p = X.shape
        if p > n:
            raise ValueError(f"backend='gpu' draws beta by the Cholesky route, which needs "
                             f"p <= N (here p = {p}, N = {n}); use backend='cpu' (BCM draw).")
        self.cp, self.dtype, self.prior = cp, np.dtype(precision), prior
        self.X = cp.ascontiguousarray(cp.asarray(X, dtype=self.dtype))
        self.n, self.p = n, p
        self.sign = 2.0 * cp.asarray(y, dtype=np.float64) - 1.0
        self.latent = LatentStep(cp, self.X, self.sign)
        self.k = self.latent.k                                 # the module's other kernels
        self.shrunk = np.asarray(shrunk, dtype=bool)
        self.shrunk_index = cp.asarray(np.flatnonzero(self.shrunk).astype(np.int32))
        self.XtX = self._gram()
        flat = prior == "flat"
        self.d = cp.asarray(np.where(self.shrunk | flat, 0.0, 1.0 / fixed_sd**2))
        self.Q = cp.empty((p, p), dtype=self.dtype)
        self.expansion = expansion and n >= 2

    def _gram(self):
        """X'X by GEMM in float64, in row blocks (the CPU's X'X, then cast to X's type)."""
        cp = self.cp
        XtX = cp.zeros((self.p, self.p))
        for start in range(0, self.n, GRAM_ROWS):
            block = self.X[start:start + GRAM_ROWS].astype(np.float64)
            XtX += block.T @ block
        return cp.ascontiguousarray(XtX.astype(self.dtype))

    def run_chain(self, chain, seed, draws, burn_in, thin, column_variance, progress=None,
                  cancel=None, done_before=0, total=None):
        """One chain, as chain.run_chain returns it: beta (draws, p), tau (draws,), shrinkage
        (p_s,), seconds. The kept draws stay on the device until the chain ends."""
        from cupyx.scipy.linalg import solve_triangular

        cp, k, p, n = self.cp, self.k, self.p, self.n
        key = (np.uint64(seed), np.uint64(chain))
        p_s = int(self.shrunk.sum())
        beta = cp.zeros(p)
        lambda_sq_inv, nu_inv = cp.ones(p_s), cp.ones(p_s)
        scalars = cp.ones(2)                                   # tau^-2, xi^-1
        d = self.d.copy()
        s = cp.empty(p)
        qparts, g = cp.empty(2), cp.ones(1)
        kept_beta, kept_tau = cp.empty((draws, p)), cp.empty(draws)
        kappa = cp.zeros(p_s)
        n_variance = n * cp.asarray(column_variance, dtype=np.float64)
        iterations = burn_in + draws * thin
        total = iterations if total is None else total
        every = max(1, iterations // 200)
        horseshoe = self.prior == "horseshoe" and p_s > 0
        start = time.perf_counter()
        for it in range(iterations):
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"sampling cancelled at iteration {it} of {iterations} "
                                f"(chain {chain})")
            step = np.uint64(it)
            if horseshoe:
                k["scales"]((1,), (THREADS,), (np.int32(p_s), self.shrunk_index, beta,
                                               lambda_sq_inv, nu_inv, scalars, *key, step, d))
            k["precision_matrix"](_blocks(p * p), (THREADS,),
                                  (np.int64(p), self.XtX, d, self.Q))
            L = cp.linalg.cholesky(self.Q)
            self.latent(beta, key, step, qparts)               # z, X'z and qparts[0] = z'z
            k["normals"](_blocks(p), (THREADS,),
                         (np.int64(p), *key, step, np.uint64(STEP_BETA), s))
            half = solve_triangular(L, self.latent.Xtz.astype(self.dtype), lower=True)
            if self.expansion:
                half64 = half.astype(np.float64)
                qparts[1] = half64 @ half64
                k["expansion"]((1,), (1,), (np.int64(n), qparts, *key, step, g))
            beta = solve_triangular(L, (g * half + s).astype(self.dtype), lower=True,
                                    trans="T").astype(np.float64)
            kept = it - burn_in
            if kept >= 0 and kept % thin == 0:
                kept_beta[kept // thin] = beta
                kept_tau[kept // thin] = scalars[0] ** -0.5
                if horseshoe:
                    kappa += 1.0 / (1.0 + n_variance / (scalars[0] * lambda_sq_inv))
            if progress is not None and ((it + 1) % every == 0 or it + 1 == iterations):
                progress(done_before + it + 1, total)
        out = {"beta": kept_beta.get(), "tau": kept_tau.get(),
               "shrinkage": kappa.get() / draws}
        out["seconds"] = time.perf_counter() - start
        if not np.all(np.isfinite(out["beta"])):
            raise np.linalg.LinAlgError(
                "the GPU chain produced non-finite draws: X'X + tau^-2 Lambda^-2 lost positive "
                "definiteness (in float32, try precision='float64'; with a flat prior the "
                "design must have full column rank).")
        return out
