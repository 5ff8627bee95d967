"""Priors (penalties) on the coefficients and their math, apart from the likelihoods and the
solvers, as Cyclops' CovariatePrior.

L1(lam) adds lam * sum |beta_j| to -l(beta) (Laplace prior); L2(lam) adds lam/2 * sum beta_j^2
(Normal prior).  l is the summed log partial likelihood, so glmnet's lambda times N is lam.
Per coordinate the strengths are vectors (lam1, lam2), zero where a covariate is unpenalised;
every solver, the profile likelihood and the CUDA kernel ccd_step.cu use the functions below
by name: ``penalty_vectors``, ``penalty_value``, ``coordinate_step``, ``trust_region`` and
``kkt_violators``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class L1:
    """Lasso penalty lam * sum |beta_j| (Yang2024 sec. 2.4; Cyclops' Laplace prior)."""

    lam: float

    def __post_init__(self):
        object.__setattr__(self, "lam", _check(self.lam, "L1"))

    @classmethod
    def from_variance(cls, variance: float) -> "L1":
        """The Laplace prior of the given variance: lam = sqrt(2 / variance), as Cyclops."""
        return cls(math.sqrt(2.0 / variance))

    @property
    def l1(self) -> float:
        return self.lam

    @property
    def l2(self) -> float:
        return 0.0


@dataclass(frozen=True)
class L2:
    """Ridge penalty lam/2 * sum beta_j^2 (Normal prior of variance 1/lam)."""

    lam: float

    def __post_init__(self):
        object.__setattr__(self, "lam", _check(self.lam, "L2"))

    @classmethod
    def from_variance(cls, variance: float) -> "L2":
        """The Normal prior of the given variance: lam = 1 / variance."""
        return cls(1.0 / variance)

    @property
    def l1(self) -> float:
        return 0.0

    @property
    def l2(self) -> float:
        return self.lam


def _check(lam, kind):
    """lam as a float: any real number type (int, float, NumPy scalars), finite and >= 0."""
    if not (isinstance(lam, numbers.Real) and not isinstance(lam, bool) and math.isfinite(lam)
            and lam >= 0):
        raise ValueError(f"{kind} penalty strength must be a finite number >= 0, got {lam!r}")
    return float(lam)


def penalty_vectors(names, penalty, unpenalized=()) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate L1 and L2 strengths (lam1, lam2), zero for the ``unpenalized`` names."""
    p = len(names)
    if penalty is not None and not isinstance(penalty, L1 | L2):
        raise ValueError(f"penalty must be None, engine.L1(lam) or engine.L2(lam), got {penalty!r}")
    if isinstance(unpenalized, str):
        unpenalized = [unpenalized]
    names = list(names)
    unknown = [u for u in unpenalized if u not in names]
    if unknown:
        raise ValueError(f"unpenalized names {unknown} are not covariates of this cohort; "
                         f"known: {names[:20]}{' ...' if p > 20 else ''}")
    lam1 = np.full(p, float(penalty.l1) if penalty is not None else 0.0)
    lam2 = np.full(p, float(penalty.l2) if penalty is not None else 0.0)
    idx = [names.index(u) for u in unpenalized]
    lam1[idx] = 0.0
    lam2[idx] = 0.0
    return lam1, lam2


def penalty_value(beta: np.ndarray, lam1: np.ndarray, lam2: np.ndarray) -> float:
    """sum_j lam1_j |beta_j| + lam2_j / 2 beta_j^2."""
    return float(np.sum(lam1 * np.abs(beta)) + 0.5 * np.sum(lam2 * beta * beta))


def coordinate_step(g: float, h: float, b: float, lam1: float, lam2: float) -> float:
    """Newton step for one coordinate of f = -l + lam1 |b| + lam2/2 b^2 (Yang2024 sec. 2.4;
    Suchard2013 Algorithm 1).

    ``g`` is dl/db and ``h`` is -d2l/db2 at the current b.  L1 at b = 0 compares the two
    directional derivatives; a step that would cross zero stops at zero.  L2 adds lam2 to the
    curvature (Normal prior).
    """
    G = -g + lam2 * b
    H = h + lam2
    if not H > 0:
        return 0.0
    if lam1 == 0.0:
        return -G / H
    if b == 0.0:
        if G + lam1 < 0:            # the objective falls to the right
            return -(G + lam1) / H
        if G - lam1 > 0:            # ... or to the left
            return -(G - lam1) / H
        return 0.0                  # both directional derivatives are >= 0: stay at zero
    delta = -(G + lam1 * np.sign(b)) / H
    if np.sign(b + delta) != np.sign(b):
        return -b                   # stop at zero rather than cross it
    return delta


def trust_region(delta: float, width: float) -> tuple[float, float]:
    """The step clipped to [-width, width] and the next half-width max(2|step|, width/2)
    (Genkin, Lewis & Madigan's trust region, as the papers' CCD)."""
    delta = float(min(max(delta, -width), width))
    return delta, max(2.0 * abs(delta), width / 2.0)


def kkt_violators(beta, g, lam1, frozen) -> np.ndarray:
    """Zero L1 coordinates whose gradient exceeds the penalty: they want to leave zero (the
    optimality conditions fail there)."""
    return ((beta == 0) & (lam1 > 0) & ~frozen
            & (np.abs(g) > lam1 * (1 + 1e-9) + 1e-12))
