"""Backends: where the risk-set scans run.  ``cpu`` (NumPy + Numba) is always there; ``gpu``
(CuPy + the CUDA kernels of cuda/) when CuPy is installed; ``auto`` takes the GPU when CuPy
sees a CUDA device, else the CPU, silently.  CuPy is imported lazily, never by ``import engine``.
"""
from __future__ import annotations

import importlib.util

from .cpu import CpuBackend
from .gpu import GpuBackend, cupy_or_error, device_count

BACKENDS = {"cpu": CpuBackend}
if importlib.util.find_spec("cupy") is not None:
    BACKENDS["gpu"] = GpuBackend


def get_backend(name: str):
    """The backend class for ``name`` ("cpu", "gpu" or "auto")."""
    if name == "auto":
        return GpuBackend if device_count() > 0 else CpuBackend
    if name == "gpu":
        cupy_or_error()
        return GpuBackend
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose 'cpu', 'gpu' or 'auto'.")
    return BACKENDS[name]
