"""The GPU horseshoe probit sampler (engine/bayes/gpu.py, cuda/horseshoe_probit.cu) against the
CPU sampler, draw for draw: both read the same Philox4x64-10 streams, so the chains agree to
rounding (float64: 1e-8). On a device (marked gpu) and on the CPU emulator of the kernels
(tests/support/cuda_emulator), where cuSOLVER's Cholesky and cuBLAS's triangular solve are stood in for
by NumPy's and SciPy's (the emulator runs kernels, not vendor libraries).
"""
import re
import shutil
import subprocess
import sys
import threading
import types

import numpy as np
import pytest
import scipy.linalg

import engine
from engine.bayes import gpu
from engine.bayes.horseshoe_probit import HorseshoeProbit
from engine.bayes.chain import run_chain
from engine.bayes.latent_launch import LatentLaunch

NVCC = shutil.which("nvcc")


def _linalg_stand_ins(cp):
    """cupy.linalg.cholesky and cupyx.scipy.linalg.solve_triangular for the emulator."""
    cp.linalg = types.SimpleNamespace(
        cholesky=lambda a: cp.asarray(np.linalg.cholesky(a.get())))
    module = types.ModuleType("cupyx.scipy.linalg")
    module.solve_triangular = lambda a, b, trans=0, lower=False: cp.asarray(
        scipy.linalg.solve_triangular(a.get(), b.get(), trans=trans, lower=lower))
    sys.modules["cupyx.scipy"].linalg = module
    return {"cupyx.scipy.linalg": module}


@pytest.fixture(scope="module")
def device(where):
    """Where the GPU sampler runs; on the emulator with the linear-algebra stand-ins."""
    if where == "emulator":
        added = _linalg_stand_ins(sys.modules["cupy"])
        sys.modules.update(added)
        yield where
        for name in added:
            sys.modules.pop(name, None)
        return
    yield where


def _cohort(n, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    beta = np.zeros(p)
    beta[:3] = [1.5, -1.0, 0.7]
    y = (0.3 + X @ beta + rng.normal(size=n) > 0).astype(int)
    return engine.Cohort.from_arrays(time=None, event=y, X=X)


@pytest.mark.parametrize("model", ["horseshoe_probit", "probit"])
def test_gpu_chains_equal_cpu_chains_draw_for_draw(device, model):
    cohort = _cohort(150, 8, seed=3)
    options = dict(model=model, draws=30, burn_in=10, chains=2, seed=7, thin=2)
    cpu = engine.sample(cohort, backend="cpu", parallel=None, **options)
    dev = engine.sample(cohort, backend="gpu", **options)
    assert dev.spec["backend"] == "gpu" and cpu.spec["backend"] == "cpu"
    np.testing.assert_allclose(dev.draws, cpu.draws, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dev.tau, cpu.tau, rtol=1e-8)
    np.testing.assert_allclose(dev.shrinkage, cpu.shrinkage, rtol=1e-8)
    assert not np.allclose(dev.draws[0], dev.draws[1])          # two chains, two streams


def test_gpu_float32_follows_the_cpu_float32_chain(device):
    cohort = _cohort(300, 6, seed=5)
    options = dict(draws=20, burn_in=5, chains=1, seed=2, precision="float32")
    cpu = engine.sample(cohort, backend="cpu", parallel=None, **options)
    dev = engine.sample(cohort, backend="gpu", **options)
    np.testing.assert_allclose(dev.draws, cpu.draws, rtol=1e-3, atol=1e-4)


def test_gpu_latent_and_scale_kernels_equal_the_cpu_steps(device):
    """One iteration from a fixed state, kernel by kernel, against HorseshoeProbit.step."""
    rng = np.random.default_rng(1)
    n, p = 500, 5
    X, y = rng.normal(size=(n, p)), (rng.random(n) < 0.4).astype(float)
    shrunk = np.array([False, True, True, True, True])
    cpu = HorseshoeProbit(X, y, shrunk, fixed_sd=3.0)
    state = cpu.initial_state()
    state.beta = np.array([0.2, 2.0, -0.1, 0.0, 1.0])
    state.tau_sq_inv, state.xi_inv = 4.0, 0.5
    from engine.bayes.rng import ChainStreams

    new, z = cpu.step(state, ChainStreams(11, 3), 17)
    dev = gpu.HorseshoeProbitGpu(X, y, shrunk, fixed_sd=3.0)
    cp, k = dev.cp, dev.k
    key, it = (np.uint64(11), np.uint64(3)), np.uint64(17)
    z_dev = cp.empty(n)
    mu = dev.X @ cp.asarray(state.beta)
    k["latent_z"](gpu._blocks(n), (gpu.THREADS,), (np.int64(n), mu, dev.sign, *key, it, z_dev))
    np.testing.assert_allclose(z_dev.get(), z, rtol=1e-12)
    lam, nu, scalars = cp.ones(4), cp.ones(4), cp.asarray(np.array([4.0, 0.5]))
    d = dev.d.copy()
    k["scales"]((1,), (gpu.THREADS,), (np.int32(4), dev.shrunk_index, cp.asarray(state.beta),
                                       lam, nu, scalars, *key, it, d))
    np.testing.assert_allclose(lam.get(), new.lambda_sq_inv, rtol=1e-12)
    np.testing.assert_allclose(nu.get(), new.nu_inv, rtol=1e-12)
    np.testing.assert_allclose(scalars.get(), [new.tau_sq_inv, new.xi_inv], rtol=1e-12)
    np.testing.assert_allclose(d.get(), cpu.prior_precision(new), rtol=1e-12)


def test_gpu_refuses_p_above_n_and_honours_cancel(device):
    with pytest.raises(ValueError, match="p <= N"):
        engine.sample(_cohort(6, 9, seed=1), backend="gpu", draws=5)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(engine.Cancelled):
        engine.sample(_cohort(50, 3, seed=1), backend="gpu", draws=5, cancel=cancel)


def test_gpu_run_chain_matches_cpu_run_chain_without_intercept(device):
    """The paper's setting (no intercept, every coefficient shrunk) through run_chain."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 7))
    y = (X[:, 0] - X[:, 1] + rng.normal(size=200) > 0).astype(float)
    shrunk = np.ones(7, bool)
    cpu = run_chain(HorseshoeProbit(X, y, shrunk), 1, 5, 25, 5, 1, X.var(0))
    dev = gpu.HorseshoeProbitGpu(X, y, shrunk).run_chain(1, 5, 25, 5, 1, X.var(0))
    for name in ("beta", "tau", "shrinkage"):
        np.testing.assert_allclose(dev[name], cpu[name], rtol=1e-8, atol=1e-10)


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
@pytest.mark.parametrize("real", ["double", "float"])
@pytest.mark.parametrize("p", [1000, 70])
def test_kernels_compile_with_nvcc_and_fit_a_block(real, p, tmp_path):
    """With gpu.py's options (latent_pass's launch for p, its register cap): every entry point
    found, blocks_per_sm blocks of latent_pass fit a multiprocessor without spilling."""
    launch = LatentLaunch.for_columns(p, 4 if real == "float" else 8)
    cmd = [NVCC, "-arch=sm_90", "-cubin", "-Xptxas", "-v", *gpu.compile_options(real, launch),
           "-o", str(tmp_path / "k.cubin"), str(gpu.SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    usage = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers",
                            done.stderr, re.S))
    assert set(usage) == set(gpu.ENTRY_POINTS)             # extern "C": found by RawModule
    for entry, registers in usage.items():
        assert int(registers) * gpu.THREADS <= 65536, entry
    assert int(usage["latent_pass"]) * launch.threads * launch.blocks_per_sm <= 65536
    spills = re.search(r"'latent_pass'.*?(\d+) bytes spill stores", done.stderr, re.S)
    assert spills.group(1) == "0"                          # the tile's rows stay in registers


def test_bench_bayes_adds_the_gpu_row(device, tmp_path):
    """python -m bench bayes runs the same chain on the GPU when there is one."""
    import json

    from bench.__main__ import main

    main(["bayes", "--n", "200", "--p", "6", "--iterations", "60", "--peers", "",
          "--out", str(tmp_path)])
    (path,) = tmp_path.glob("*.json")
    record = json.loads(path.read_text())
    assert list(record["tools"]) == ["survscan-gibbs-cpu-float64", "survscan-gibbs-gpu-float64"]
    assert record["tools"]["survscan-gibbs-gpu-float64"]["max_abs_gap_to_cpu_chain"] < 1e-8
    assert record["skipped"] == {}
