"""Cyclic coordinate descent as in the papers (seed 000 sec. 2.4; seed 002 Algorithm 1).

Each coordinate takes one Newton step on the penalised objective f = -l(beta) + penalty,
limited by a trust region whose half-width starts at 1 and becomes max(2|step|, width/2)
(seed 000 eq. 17).  L1 at beta_j = 0 compares the two directional derivatives; a step that
would cross zero stops at zero.  L2 adds lam to the curvature (Normal prior).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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

    def __post_init__(self):
        if self.width is None:
            self.width = np.ones_like(self.beta)

    def objective(self, ll: float) -> float:
        b = self.beta
        return -ll + float(np.sum(self.lam1 * np.abs(b)) + 0.5 * np.sum(self.lam2 * b * b))


def step(g: float, h: float, b: float, lam1: float, lam2: float) -> float:
    """Newton step for one coordinate of f = -l + lam1 |b| + lam2/2 b^2.

    ``g`` is dl/db and ``h`` is -d2l/db2 at the current b.
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


def run(model, state: SolverState, tol: float, max_iter: int, progress=None,
        coords=None) -> SolverState:
    """CCD cycles until the objective and the steps have settled, or ``max_iter`` cycles.

    Converged when the relative change of the objective in a cycle is below ``tol`` and no
    coordinate moved by more than 10 * tol relative to its size.  ``coords`` restricts the
    cycle to a working set (default: every coordinate, as in the papers).
    """
    b = state.beta
    coords = range(b.size) if coords is None else coords
    device_cycle = getattr(getattr(model, "backend", None), "ccd_cycle", None)
    ll = model.loglik()
    f_old = state.objective(ll)
    for _ in range(max_iter):
        if device_cycle is not None:
            biggest = device_cycle(state, coords, DIVERGED, model.scale)
        else:
            biggest = cycle(model, state, coords)
        state.n_iter += 1
        ll = model.loglik()
        f = state.objective(ll)
        state.history.append(f)
        if progress is not None:
            progress(state)
        if abs(f_old - f) <= tol * (abs(f) + 1.0) and biggest <= 10.0 * tol:
            state.converged = True
            break
        f_old = f
    return state


def cycle(model, state: SolverState, coords) -> float:
    """One sweep over ``coords``; returns the largest relative step.  A backend with a
    ``ccd_cycle`` method (the GPU's: the same steps with nothing crossing to the host per
    coordinate, seed 001 Fig. 3) runs the sweep itself instead."""
    b = state.beta
    biggest = 0.0
    for j in coords:
        if state.frozen[j]:
            continue
        g, h = model.grad_hess(j)
        delta = step(g, h, b[j], state.lam1[j], state.lam2[j])
        w = state.width[j]
        delta = float(np.clip(delta, -w, w))
        state.width[j] = max(2.0 * abs(delta), w / 2.0)
        if delta != 0.0:
            model.update(j, delta)
            b[j] += delta
            biggest = max(biggest, abs(delta) / (1.0 + abs(b[j])))
            if diverging(state, model.scale, j, delta):
                state.frozen[j] = True
    return biggest


def diverging(state: SolverState, scale: np.ndarray, j: int, delta: float) -> bool:
    """An unpenalised coefficient still moving outward beyond any finite hazard ratio."""
    unpenalised = state.lam1[j] == 0.0 and state.lam2[j] == 0.0
    return unpenalised and abs(state.beta[j]) * scale[j] > DIVERGED and delta * state.beta[j] > 0
