"""The choices the Design tab offers, from the engine's public names only.

The engine publishes its options as tuples (engine.MODELS, TIES, SOLVERS, BACKENDS,
PRECISIONS) and its device probes as engine.device (device_count, description,
available_backends). Until an engine without them is gone, the app falls back to the choices
every engine version accepts (Cox, Efron/Breslow, the CPU).
"""

from __future__ import annotations

import engine

SURVIVAL_MODELS = ("cox", "fine_gray")  # logistic regression is not a survival model
PENALTIES = ("none", "L1", "L2")
TIES = tuple(getattr(engine, "TIES", ("efron", "breslow")))
SOLVERS = tuple(getattr(engine, "SOLVERS", ("auto", "ccd", "newton")))
BACKENDS = tuple(getattr(engine, "BACKENDS", ("cpu", "auto", "gpu")))


def _device():
    """engine.device when this engine has it, else None."""
    try:
        from engine import device
    except ImportError:
        return None
    return device


def device_count() -> int:
    """CUDA devices the engine can use (0 without CuPy, a driver or a device)."""
    device = _device()
    return int(device.device_count()) if device is not None else 0


def detect_device() -> str:
    """The compute device the engine would use with backend="auto", in words."""
    device = _device()
    if device is None or device.device_count() < 1:
        return "CPU (no CUDA device)"
    return str(device.description())


def available_backends() -> list[str]:
    """Backends a user may pick: cpu and auto always, gpu when the engine can use a device."""
    device = _device()
    usable = set(device.available_backends()) if device is not None else {"cpu"}
    return ["cpu", "auto"] + (["gpu"] if "gpu" in usable else [])


def available_models() -> list[str]:
    """The survival models engine.fit accepts."""
    fitted = getattr(engine, "MODELS", ("cox", "fine_gray"))
    return [m for m in SURVIVAL_MODELS if m in fitted]
