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

from engine.backends.cox_gpu import _ENTRY_POINTS, CUDA_DIR, SOURCES, THREADS

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists()
                                else None)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")


def test_every_source_is_listed():
    assert sorted(p.name for p in CUDA_DIR.glob("*.cu")) == sorted(SOURCES)
    assert set(_ENTRY_POINTS) == set(SOURCES)


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
