"""Backends: where the risk-set scans run.  ``cpu`` (NumPy + Numba) is always there."""
from __future__ import annotations

from .cpu import CpuBackend

BACKENDS = {"cpu": CpuBackend}


def get_backend(name: str):
    """The backend class for ``name`` ("cpu", "gpu" or "auto")."""
    if name == "auto":
        return BACKENDS.get("gpu", CpuBackend)
    if name not in BACKENDS:
        if name == "gpu":
            raise ValueError("backend='gpu' is not available in this build: survscan's CuPy "
                             "backend has not landed yet; use backend='cpu' or 'auto'.")
        raise ValueError(f"unknown backend {name!r}; choose 'cpu', 'gpu' or 'auto'.")
    return BACKENDS[name]
