"""Where a solver stands: the coefficients, the per-coordinate penalty strengths, the frozen
(diverging) coordinates and the trust-region widths, shared by every solver stage."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..priors import penalty_value

# |beta_j| * (range of x_j) beyond this means a hazard ratio over e^30 across the column's range:
# the likelihood is monotone in beta_j and the estimate is infinite.
DIVERGED = 30.0


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
