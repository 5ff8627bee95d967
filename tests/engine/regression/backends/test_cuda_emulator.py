"""The CPU emulator of the CUDA kernels (tests/support/cuda_emulator) is itself sound: barriers and
shared memory behave as on a device, bad launches are refused, CuPy's host/device rules hold,
and the real kernels agree with plain definitions across many tiles (more than 256 tiles, so the
carry scan runs several rounds).  Under AddressSanitizer (the kernels built with
-fsanitize=address, in a child process with libasan preloaded: compute-sanitizer's memcheck on a
device) the backend's kernels read and write only inside their arrays."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from cuda_emulator import CXX, SCHEDULES, EmulatorError, Module, schedule
from cuda_emulator.cupy_on_cpu import installed
from engine.regression import modeldata
from engine.regression.backends.cox_cpu import CoxCpuBackend
from engine.regression.modeldata import HEAD

TOY = r'''
extern "C" __global__ void reverse_block(const double* x, double* out, long long n)
{
    __shared__ double tile[128];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    const long long j = (long long)blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) out[j] = tile[threadIdx.x];
}

extern "C" __global__ void racy(double* out)
{
    __shared__ double cell[64];
    cell[threadIdx.x] = threadIdx.x;
    __syncthreads();
    cell[threadIdx.x] += 1.0;                 // no barrier between this write and the read below
    out[threadIdx.x] = cell[(threadIdx.x + 1) % 64];
}

extern "C" __global__ void divergent(double* out)
{
    if (threadIdx.x < 5) return;
    __syncthreads();
    out[threadIdx.x] = 1.0;
}
'''


@pytest.fixture(scope="module")
def toy():
    return Module(TOY)


@pytest.fixture(scope="module")
def cp():
    with installed() as module:
        yield module


def test_barrier_and_shared_memory(toy, cp):
    """Each thread reads what another thread of its block wrote before the barrier."""
    n = 1000
    x = cp.asarray(np.arange(n, dtype=np.float64))
    out = cp.zeros(n, np.float64)
    toy.get_function("reverse_block")((8,), (128,), (x, out, np.int64(n)))
    source = np.arange(1024).reshape(8, 128)[:, ::-1].ravel()[:n]     # out[k] = x[source[k]]
    np.testing.assert_array_equal(out.get(), np.where(source < n, source, 0))


def test_barrier_divergence_is_an_error(toy, cp):
    with pytest.raises(EmulatorError, match="barrier divergence"):
        toy.get_function("divergent")((1,), (32,), (cp.zeros(32, np.float64),))


def test_thread_orders_expose_a_race(toy, cp):
    results = set()
    for name in SCHEDULES:
        out = cp.zeros(64, np.float64)
        with schedule(name):
            toy.get_function("racy")((1,), (64,), (out,))
        results.add(out.get().tobytes())
    assert len(results) > 1


def test_arguments_must_match_the_c_types(toy, cp):
    kernel = toy.get_function("reverse_block")
    x, out = cp.zeros(4, np.float64), cp.zeros(4, np.float64)
    with pytest.raises(TypeError, match="parameter 0 expects floating of 8 bytes"):
        kernel((1,), (4,), (cp.zeros(4, np.float32), out, np.int64(4)))
    with pytest.raises(TypeError, match="parameter 2 expects signed integer of 8 bytes"):
        kernel((1,), (4,), (x, out, np.int32(4)))
    with pytest.raises(TypeError, match="NumPy scalar"):
        kernel((1,), (4,), (x, out, 4))
    with pytest.raises(TypeError, match="device array"):
        kernel((1,), (4,), (np.zeros(4), out, np.int64(4)))
    with pytest.raises(TypeError, match="not contiguous"):
        kernel((1,), (4,), (cp.zeros(8, np.float64)[::2], out, np.int64(4)))
    with pytest.raises(TypeError, match="3 parameters"):
        kernel((1,), (4,), (x, out))


def test_device_arrays_keep_cupys_rules(cp):
    d = cp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(d)
    with pytest.raises(TypeError, match="NumPy array in device code"):
        d + np.ones(3)
    assert isinstance(d.sum(), cp.ndarray) and float(d.sum()) == 3.0
    np.testing.assert_array_equal((cp.exp(d) * 2).get(), np.exp(np.arange(3.0)) * 2)


def _segmented_cumsum(values, heads):
    """The running sum restarted at every head: the whole cumsum less its value before the
    segment's head (integers: exact)."""
    total = np.cumsum(values)
    head = np.maximum.accumulate(np.where(heads, np.arange(values.size), 0))
    return total - (total[head] - values[head])


@pytest.fixture(scope="module")
def large(cp):
    """N = 300,000 (293 tiles: the carry scans run in two rounds of 256), 500 strata, ties."""
    from engine.regression.backends.cox_gpu import CoxGpuBackend
    cohort = engine.simulate(300_000, 3, n_strata=500, seed=11, density=0.3)
    md = modeldata.build(cohort)
    gpu = CoxGpuBackend(modeldata.build(cohort), True)
    return md, gpu


def test_segmented_scan_kernel_over_many_tiles(large, cp):
    md, gpu = large
    rng = np.random.default_rng(0)
    values = rng.integers(-5, 6, size=(2, md.n)).astype(float)   # integers: exact in any order
    heads = (md.flags & HEAD) != 0
    got = gpu.scan(cp.asarray(values), cp.asarray(md.flags), HEAD, False).get()
    for row in range(2):
        np.testing.assert_array_equal(got[row], _segmented_cumsum(values[row], heads))
    tails = np.zeros(md.n, bool)
    tails[md.strata_bounds[1:] - 1] = True
    flags = np.where(tails, HEAD, 0).astype(np.uint8)
    back = gpu.scan(cp.asarray(values), cp.asarray(flags), HEAD, True).get()
    np.testing.assert_array_equal(back[0], _segmented_cumsum(values[0, ::-1], tails[::-1])[::-1])


def test_fused_kernel_over_many_tiles(large):
    """One column (the three are alike: random, 30% filled): under AddressSanitizer each
    column's fused pass over 293 tiles took about 5 s."""
    md, gpu = large
    cpu = CoxCpuBackend(md, True)
    beta = np.array([0.3, -0.2, 0.1])
    cpu.set_beta(beta)
    gpu.set_beta(beta)
    np.testing.assert_allclose(gpu.grad_hess(1), cpu.grad_hess(1), rtol=1e-10)
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=1e-12)


def test_kernels_have_no_race(cp):
    """The backend's kernels give bit-identical results whatever order a block's threads run
    in between barriers (strata, ties, entry times, Efron)."""
    from engine.regression.backends.cox_gpu import CoxGpuBackend
    heart = engine.datasets.load_stanford_heart()
    cohorts = [engine.simulate(3000, 4, n_strata=40, seed=4, density=0.5),
               engine.Cohort.from_frame(heart, time="stop", event="event", start="start",
                                        id="id", covariates=["age", "year", "surgery"])]
    for cohort in cohorts:
        md = modeldata.build(cohort)
        seen = set()
        for name in SCHEDULES:
            with schedule(name):
                gpu = CoxGpuBackend(modeldata.build(cohort), True)
                gpu.set_beta(np.linspace(-0.2, 0.3, md.p))
                numbers = [gpu.grad_hess(j) for j in range(md.p)]
                numbers += [gpu.loglik_gradient()[1].tolist()]
                gpu.update(0, 0.5)
                numbers += [gpu.grad_hess(1), gpu.loglik()]
            seen.add(repr(numbers))
        assert len(seen) == 1


def test_a_captured_graph_keeps_its_pointers(cp):
    """As a CUDA graph does: replay reads the arrays of the capture, so host code that rebinds
    an array after capture is caught by wrong numbers."""
    kernel = cp.RawModule(code=TOY).get_function("reverse_block")
    x, out = cp.asarray(np.arange(4.0)), cp.zeros(4, np.float64)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        kernel((1,), (4,), (x, out, np.int64(4)))
        with pytest.raises(RuntimeError, match="during a stream capture"):
            out.get()
        graph = stream.end_capture()
    assert out.get().tolist() == [0, 0, 0, 0]           # captured, not run
    x.fill(1.0)                                         # same array, new values: seen
    x_rebound = cp.asarray(np.full(4, 7.0))             # a new array: not seen
    assert x_rebound is not x
    graph.launch()
    assert out.get().tolist() == [1, 1, 1, 1]


def test_launch_limits_are_a_devices(toy, cp):
    kernel = toy.get_function("reverse_block")
    x, out = cp.zeros(4, np.float64), cp.zeros(4, np.float64)
    with pytest.raises(EmulatorError, match="exceed the device"):
        kernel((1, 65536), (4,), (x, out, np.int64(4)))
    with pytest.raises(EmulatorError, match="more than 1024 threads"):
        kernel((1,), (64, 32), (x, out, np.int64(4)))


def test_scan_of_more_columns_than_one_launch_takes(cp, monkeypatch):
    """More columns than gridDim.y allows are scanned in several launches (the limit lowered
    here so the test stays small)."""
    from engine.regression.backends import cox_gpu as gpu_module
    from engine.regression.backends.cox_gpu import CoxGpuBackend
    cohort = engine.simulate(1500, 2, n_strata=7, seed=1)
    gpu = CoxGpuBackend(modeldata.build(cohort), False)
    values = np.random.default_rng(2).integers(-3, 4, size=(5, 1500)).astype(float)
    flags = cp.asarray(gpu.md.flags)
    whole = gpu.scan(cp.asarray(values), flags, HEAD, False).get()
    monkeypatch.setattr(gpu_module, "_GRID_Y", 2)
    np.testing.assert_array_equal(gpu.scan(cp.asarray(values), flags, HEAD, False).get(), whole)


ROOT = Path(__file__).resolve().parents[4]
OVERFLOW = '''
import sys
sys.path[:0] = ["tests/support", "."]
import numpy as np
from cuda_emulator.cupy_on_cpu import installed
SRC = r"""
extern "C" __global__ void write_past(double* out, long long n)
{
    const long long i = threadIdx.x;
    if (i <= n) out[i] = 1.0;            // i == n: one past the end
}
"""
with installed() as cp:
    out = cp.zeros(8, np.float64)
    cp.RawModule(code=SRC).get_function("write_past")((1,), (32,), (out, np.int64(8)))
'''


def _under_asan(args, timeout=1500):
    def library(name):
        return subprocess.run([CXX, f"-print-file-name={name}"], capture_output=True,
                              text=True).stdout.strip()

    # libstdc++ loaded at start beside the runtime: its __cxa_throw interceptor finds the real
    # one only then, and C++ code that throws (matplotlib's ft2font, imported with ArviZ by
    # tests/conftest.py) otherwise stops the process with "CHECK failed: real___cxa_throw"
    preload = f"{library('libasan.so')} {library('libstdc++.so.6')}"
    env = {**os.environ, "SURVSCAN_EMULATOR_ASAN": "1", "LD_PRELOAD": preload,
           "ASAN_OPTIONS": "detect_leaks=0"}
    return subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow  # g++ with AddressSanitizer
def test_address_sanitizer_catches_a_planted_overflow():
    done = _under_asan(["-c", OVERFLOW], timeout=120)
    assert done.returncode != 0
    assert "heap-buffer-overflow" in done.stderr and "write_past" in done.stderr


@pytest.mark.slow  # a pytest run under AddressSanitizer: 15 s on cached kernels, a minute cold
def test_kernels_stay_inside_their_arrays():
    """Every Cox case's kernels (fused scan, updates, scans, dots, quadratic step), the
    logistic and Fine-Gray backends' methods and the 300,000-row runs over many tiles, with
    every access checked."""
    done = _under_asan(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "tests/engine/regression/backends/test_gpu_backend.py", "tests/engine/regression/backends/test_cuda_emulator.py",
                        "tests/engine/regression/backends/test_logistic_gpu.py", "tests/engine/regression/backends/test_fine_gray_gpu.py", "-k",
                        "emulator and (kernels_equal or quadratic or methods_equal) "
                        "or many_tiles"])
    assert "AddressSanitizer" not in done.stderr + done.stdout, done.stderr[-3000:]
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
