"""The SCCS GPU backend = the CPU backend (float64, 1e-8 relative), per kernel and per fit, on a
CUDA device (marked gpu) and everywhere on the CPU emulator of tests/support/cuda_emulator; and its CUDA
source compiles with nvcc and fits a block of 256 threads."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.regression.backends import sccs_gpu
from engine.regression.backends.sccs_cpu import SccsCpuBackend
from engine.regression.models.sccs import SccsModel
from sccs_oracles import AGE_CUTS, read, simulated

RTOL = 1e-8
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists()
                                else None)
@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_source_compiles_and_fits_a_block(tmp_path):
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v",
           "-o", str(tmp_path / "k.cubin"), str(sccs_gpu.SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    usage = dict(re.findall(r"Function properties for (\w+).*?(Used \d+ registers[^\n]*)",
                            done.stderr, re.S))
    assert set(usage) == set(sccs_gpu.ENTRY_POINTS)
    for entry, line in usage.items():
        registers = int(re.search(r"Used (\d+) registers", line).group(1))
        assert registers * sccs_gpu.THREADS <= 65536, (entry, line)
    ptx = tmp_path / "k.ptx"
    done = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "--ptx", "-o", str(ptx),
                           str(sccs_gpu.SOURCE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for entry in sccs_gpu.ENTRY_POINTS:                 # extern "C": found by RawModule
        assert f".entry {entry}(" in ptx.read_text()


@pytest.fixture(scope="module")
def datasets():
    itp = engine.SccsData.from_cases(read("itpdat"), case="case", obs_start="sta",
                                     obs_end="end", event_times="itp", exposure_start="mmr",
                                     risk_windows={"mmr": [(0, 42)]}, age_cuts=AGE_CUTS)
    case, length, y, X = simulated(21, n_cases=300, p=8, eras=12)
    sim = engine.SccsData.from_arrays(case=case, length=length, events=y, X=X)
    return {"itpdat": itp, "simulated": sim}


def _pair(sccs):
    m = SccsModel(sccs, backend="cpu")
    b = m.backend
    args = (b.X, b.case_ptr, b.length, b.y)
    return SccsCpuBackend(*args), sccs_gpu.SccsGpuBackend(*args)


@pytest.mark.parametrize("name", ["itpdat", "simulated"])
def test_kernels_equal_cpu(where, datasets, name):
    cpu, gpu = _pair(datasets[name])
    p = cpu.X.shape[1]
    rng = np.random.default_rng(1)
    for beta in (np.zeros(p), rng.normal(0, 0.5, p)):
        cpu.set_beta(beta)
        gpu.set_beta(beta)
        assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
        ll_c, g_c = cpu.loglik_gradient()
        ll_g, g_g = gpu.loglik_gradient()
        np.testing.assert_allclose(g_g, g_c, rtol=RTOL, atol=1e-10)
        for j in range(p):
            np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-10)
    for j, delta in [(0, 0.3), (p - 1, -0.7), (1, 60.0), (0, -0.1)]:   # 60: a re-centring
        cpu.update(j, delta)
        gpu.update(j, delta)
        np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-10)
        assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    w = rng.integers(0, 3, cpu.D.size).astype(float)
    cpu.set_weights(w)
    gpu.set_weights(w)
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    cols = np.arange(p)
    for a, b in zip(gpu.information(cols), cpu.information(cols)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)
    lam = np.full(p, 0.5)
    step_g = gpu.quadratic_step(cols, np.zeros(p), lam, lam, 1e-12, 100)
    step_c = cpu.quadratic_step(cols, np.zeros(p), lam, lam, 1e-12, 100)
    for a, b in zip(step_g, step_c):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)


@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("penalty", [None, engine.L1(2.0)])
def test_fits_equal_cpu(where, datasets, solver, penalty):
    sccs = datasets["simulated"]
    cpu = engine.fit(sccs, model="sccs", penalty=penalty, solver=solver, tol=1e-12)
    gpu = engine.fit(sccs, model="sccs", penalty=penalty, solver=solver, tol=1e-12,
                     backend="gpu")
    assert gpu.spec["backend"] == "gpu"
    np.testing.assert_allclose(gpu.coef.to_numpy(), cpu.coef.to_numpy(), rtol=RTOL, atol=1e-10)
    assert gpu.loglik == pytest.approx(cpu.loglik, rel=RTOL)
    if penalty is None:
        np.testing.assert_allclose(gpu.se.to_numpy(), cpu.se.to_numpy(), rtol=RTOL)


def test_thread_orders_give_one_result(where, datasets):
    """The block sums read shared memory only across barriers: the three thread orders of the
    emulator (forward, reverse, interleaved) agree to the rounding of the atomic per-case sums
    (whose order of additions follows the threads', on a device too); a race would lose or
    double whole terms."""
    if where != "emulator":
        pytest.skip("thread orders are the emulator's")
    from cuda_emulator import SCHEDULES, schedule
    _, gpu = _pair(datasets["simulated"])
    gpu.set_beta(np.linspace(-0.5, 0.5, gpu.X.shape[1]))
    results = []
    for name in SCHEDULES:
        with schedule(name):
            gh = [gpu.grad_hess(j) for j in range(gpu.X.shape[1])]
            results.append(np.concatenate([np.ravel(gh), gpu.loglik_gradient()[1]]))
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], rtol=1e-13, atol=1e-12)
