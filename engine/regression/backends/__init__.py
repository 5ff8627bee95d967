"""Backends by likelihood and device: ``<likelihood>_<device>.py`` files, each a class that
answers the Backend protocol (protocol.py), found through one registry so that no model imports
a concrete class.

``get_backend(model, device)``: device "cpu" (NumPy + Numba, always there), "gpu" (CuPy and the
CUDA kernels of cuda/, where the likelihood has them) or "auto" (the GPU when CuPy sees a CUDA
device and the likelihood has GPU kernels, else the CPU, silently).
"""
from __future__ import annotations

import importlib

from ...core.device import cupy_or_error, device_count

# (likelihood, device) -> "module:class"; a new likelihood or device is one line here.
REGISTRY = {
    ("cox", "cpu"): "cox_cpu:CoxCpuBackend",
    ("cox", "gpu"): "cox_gpu:CoxGpuBackend",
    ("fine_gray", "cpu"): "fine_gray_cpu:FineGrayCpuBackend",
    ("fine_gray", "gpu"): "fine_gray_gpu:FineGrayGpuBackend",
    ("logistic", "cpu"): "logistic_cpu:LogisticCpuBackend",
    ("logistic", "gpu"): "logistic_gpu:LogisticGpuBackend",
    ("poisson", "cpu"): "poisson_cpu:PoissonCpuBackend",
    ("poisson", "gpu"): "poisson_gpu:PoissonGpuBackend",
    ("sccs", "cpu"): "sccs_cpu:SccsCpuBackend",
    ("sccs", "gpu"): "sccs_gpu:SccsGpuBackend",
}
DEVICES = ("cpu", "gpu", "auto")


def devices(model: str) -> tuple[str, ...]:
    """The devices with kernels for ``model``."""
    return tuple(d for (m, d) in REGISTRY if m == model)


def get_backend(model: str, device: str):
    """The backend class of ``model`` on ``device`` ("cpu", "gpu" or "auto")."""
    if device not in DEVICES:
        raise ValueError(f"unknown backend {device!r}; choose one of {DEVICES}.")
    if device == "auto":
        device = "gpu" if (model, "gpu") in REGISTRY and device_count() > 0 else "cpu"
    if (model, device) not in REGISTRY:
        raise ValueError(f"backend={device!r} has no {model} kernels yet; use one of "
                         f"{devices(model) + ('auto',)}.")
    if device == "gpu":
        cupy_or_error()
    module, cls = REGISTRY[(model, device)].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
