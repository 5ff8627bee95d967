"""Every CUDA source of the GPU backend compiles with nvcc, in float64 and float32.

No device is needed: nvcc compiles to PTX for sm_90 (the H100/H200 generation), so CI on
machines without a GPU still catches a kernel that does not compile.  NVRTC (cupy.RawModule)
compiles the same files with the same options at run time.
"""
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.backends.gpu import _ENTRY_POINTS, CUDA_DIR, SOURCES

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
