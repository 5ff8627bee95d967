"""The choices the Design tab offers, from the engine's public names only: the option tuples
(engine.MODELS, TIES, SOLVERS, BACKENDS) and the device probes of engine.device."""

from __future__ import annotations

import engine

# Poisson: events over person-time (the log offset), with follow-up bands the
# piecewise-exponential model; logistic regression is not a survival model
SURVIVAL_MODELS = ("cox", "fine_gray", "poisson")
# each model's ratio exp(coef): its short and long names and the title of its table
RATIOS = {"cox": ("HR", "hazard ratio", "Hazard ratios"),
          "fine_gray": ("sHR", "subdistribution hazard ratio",
                        "Subdistribution hazard ratios (Fine-Gray)"),
          "poisson": ("IRR", "incidence rate ratio", "Incidence rate ratios (Poisson)")}
PENALTIES = ("none", "L1", "L2")
TIES = engine.TIES
SOLVERS = engine.SOLVERS
BACKENDS = engine.BACKENDS


def detect_device() -> str:
    """The compute device the engine would use with backend="auto", in words."""
    if "gpu" not in engine.device.available_backends():
        return f"CPU ({engine.device.description()})"
    return f"GPU: {engine.device.description()}"


def available_backends() -> list[str]:
    """Backends a user may pick: cpu and auto always, gpu when the engine can use a device."""
    return ["cpu", "auto"] + (["gpu"] if "gpu" in engine.device.available_backends() else [])


def available_models() -> list[str]:
    """The survival models engine.fit accepts."""
    return [m for m in SURVIVAL_MODELS if m in engine.MODELS]
