"""Where a solver stands: the coefficients, the per-coordinate penalty strengths, the frozen
(diverging) coordinates and the trust-region widths, shared by every solver stage."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..priors import penalty_value

# |beta_j| * (range of x_j) beyond this means a hazard ratio over e^30 across the column's range:
# with the likelihood flat there (``diverging``) it is monotone in beta_j and the estimate is
# infinite.
DIVERGED = 30.0
# A Newton gain (g^2/h) below this fraction of the objective: nothing left to gain along a
# coordinate (at DIVERGED a monotone likelihood's is about e^-30 of it).
FLAT = 1e-10
# Beyond this |beta_j| * range, moving outward, a coefficient diverges whatever its gain: a
# monotone likelihood along a combination of columns loses its gain slowly (seen: |beta| range
# of 1,000 before it was flat), and exp(eta) must stay far from overflow.
RUNAWAY = 200.0


@dataclass
class SolverState:
    """Where a solver stands; shared by the CCD and Newton stages."""

    beta: np.ndarray
    lam1: np.ndarray
    lam2: np.ndarray
    frozen: np.ndarray                       # coordinates fixed at a diverging value
    width: np.ndarray = None                 # trust-region half-widths
    n_iter: int = 0
    converged: bool = False
    history: list = field(default_factory=list)  # objective after each cycle / Newton step
    gradient: np.ndarray = None              # dl/dbeta at beta, when the last KKT check was there

    def __post_init__(self):
        if self.width is None:
            self.width = np.ones_like(self.beta)

    def objective(self, ll: float) -> float:
        """-l(beta) + penalty at the current beta, given l."""
        return -ll + penalty_value(self.beta, self.lam1, self.lam2)



def flat_gain(f: float) -> float:
    """The gain g^2/h below which the likelihood is flat along a coordinate: FLAT relative to
    the objective ``f``."""
    return FLAT * (abs(f) + 1.0)


def diverging(state: SolverState, scale, cols, moved, g, h, flat: float) -> np.ndarray:
    """Which of the coordinates ``cols`` diverge, given the step each just took (``moved``) and
    the log-likelihood's gradient ``g`` and curvature ``h = -d2l`` along each: unpenalised,
    beyond any finite hazard or odds ratio (|beta| range > DIVERGED), still moving outward,
    and the likelihood flat there: no curvature left, or a Newton gain g^2/h of at most
    ``flat`` (flat_gain) while the Newton step g/h still moves x beta outward by 0.01 or more
    across the column's range; or |beta| range beyond RUNAWAY.  A monotone likelihood loses its gradient and its curvature
    together; a large finite estimate (a covariate with an outlying value: a logistic
    coefficient of 1.03 with |beta| range 45) keeps its curvature and is not taken for
    infinite, and at a finite optimum the Newton step is nil."""
    cols = np.asarray(cols)
    beta = state.beta[cols]
    scale = np.asarray(scale, np.float64)[cols]
    g, h = np.asarray(g, np.float64), np.asarray(h, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(h > 0, g / h, np.inf * np.sign(g))
        gain = np.where(h > 0, g * g / h, np.inf)
    no_curvature = ~(h > 0) & (g * beta >= 0)
    gone = (gain <= flat) & (np.abs(step) * scale >= 0.01) & (step * beta > 0)
    return ((state.lam1[cols] == 0.0) & (state.lam2[cols] == 0.0)
            & (np.abs(beta) * scale > DIVERGED) & (np.asarray(moved) * beta > 0)
            & (no_curvature | gone | (np.abs(beta) * scale > RUNAWAY)))
