"""Every CUDA source of the GPU backend compiles with nvcc, in float64 and float32.

No device is needed: nvcc compiles to PTX for sm_90 (the H100/H200 generation), so CI on
machines without a GPU still catches a kernel that does not compile.  NVRTC (cupy.RawModule)
compiles the same files with the same options at run time.  ptxas then assembles them for sm_90
and reports each kernel's registers and shared memory: a block of the backend's 256 threads must
fit on one multiprocessor (65,536 registers, 48 KiB of static shared memory), or the launch
would fail on the device.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.regression.backends import logistic_gpu
from engine.regression.backends.cox_gpu import _ENTRY_POINTS, CUDA_DIR, SOURCES, THREADS

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists()
                                else None)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")


def test_every_source_is_listed():
    assert sorted(p.name for p in CUDA_DIR.glob("*.cu")) == sorted(SOURCES)
    assert set(_ENTRY_POINTS) == set(SOURCES)


@pytest.mark.slow  # nvcc on every source: about 4 s
@pytest.mark.parametrize("real", ["double", "float"])
@pytest.mark.parametrize("source", SOURCES)
def test_compiles_with_nvcc(source, real, tmp_path):
    ptx = tmp_path / f"{source}.{real}.ptx"
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "--ptx", f"-I{CUDA_DIR}",
           f"-DSURVSCAN_REAL={real}", "-o", str(ptx), str(CUDA_DIR / source)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = ptx.read_text()
    for entry in _ENTRY_POINTS[source]:          # extern "C": unmangled, as RawModule looks them up
        assert f".entry {entry}(" in text, entry


@pytest.mark.slow  # nvcc and ptxas on every source: about 4 s
@pytest.mark.parametrize("real", ["double", "float"])
@pytest.mark.parametrize("source", SOURCES)
def test_every_kernel_fits_a_block_of_256_threads(source, real, tmp_path):
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v", f"-I{CUDA_DIR}",
           f"-DSURVSCAN_REAL={real}", "-o", str(tmp_path / "k.cubin"), str(CUDA_DIR / source)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    usage = dict(re.findall(r"Function properties for (\w+).*?(Used \d+ registers[^\n]*)",
                            done.stderr, re.S))
    assert set(usage) == set(_ENTRY_POINTS[source])
    for entry, line in usage.items():
        registers = int(re.search(r"Used (\d+) registers", line).group(1))
        smem = re.search(r"(\d+) bytes smem", line)
        assert registers * THREADS <= 65536, (entry, line)
        assert (int(smem.group(1)) if smem else 0) <= 48 * 1024, (entry, line)


# Sources of the other likelihoods' backends (own folders under cuda/): path -> entry points.
LIKELIHOOD_SOURCES = {logistic_gpu.SOURCE: logistic_gpu.ENTRY_POINTS}


@pytest.mark.parametrize("source", list(LIKELIHOOD_SOURCES), ids=lambda p: p.name)
def test_likelihood_sources_compile_and_fit_a_block(source, tmp_path):
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v", f"-I{CUDA_DIR}",
           "-o", str(tmp_path / "k.cubin"), str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    usage = dict(re.findall(r"Function properties for (\w+).*?(Used \d+ registers[^\n]*)",
                            done.stderr, re.S))
    assert set(usage) == set(LIKELIHOOD_SOURCES[source])
    for entry, line in usage.items():
        assert int(re.search(r"Used (\d+) registers", line).group(1)) * THREADS <= 65536, line
    ptx = tmp_path / "k.ptx"
    done = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "--ptx", f"-I{CUDA_DIR}",
                           "-o", str(ptx), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for entry in LIKELIHOOD_SOURCES[source]:            # extern "C": found by RawModule
        assert f".entry {entry}(" in ptx.read_text(), entry


# NVRTC (cupy.RawModule) compiles without the host C library that nvcc includes implicitly, so
# a macro of <math.h> or <float.h> compiles here and fails on the device: INFINITY in the SCCS
# kernel did, on the first run on an H100 (2026-11-23).  Each source is checked by name.
HOST_ONLY = re.compile(r"\b(INFINITY|NAN|HUGE_VALF?|M_PI|FLT_MAX|DBL_MAX|FLT_EPSILON|"
                       r"DBL_EPSILON)\b|#include\s*<")


@pytest.mark.parametrize("source", sorted(CUDA_DIR.rglob("*.cu*")), ids=lambda p: p.name)
def test_sources_use_nothing_nvrtc_lacks(source):
    code = re.sub(r"//[^\n]*", "", source.read_text())          # comments may name them
    assert not HOST_ONLY.search(code), (source.name, HOST_ONLY.search(code).group(0))
