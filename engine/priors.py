"""Priors (penalties) on the coefficients, apart from the likelihoods and the solver.

L1(lam) adds lam * sum |beta_j| to -l(beta) (Laplace prior); L2(lam) adds lam/2 * sum beta_j^2
(Normal prior).  l is the summed log partial likelihood, so glmnet's lambda times N is lam.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class L1:
    """Lasso penalty lam * sum |beta_j| (seed 000 sec. 2.4; Cyclops' Laplace prior)."""

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
