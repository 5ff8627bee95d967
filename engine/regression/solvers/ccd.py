"""Cyclic coordinate descent as in the papers (Yang2024 sec. 2.4; Suchard2013 Algorithm 1).

Each coordinate takes one Newton step on the penalised objective f = -l(beta) + penalty
(priors.coordinate_step), limited by a trust region whose half-width starts at 1 and becomes
max(2|step|, width/2) (priors.trust_region; Yang2024 eq. 17).
"""
from __future__ import annotations

from ..priors import coordinate_step, trust_region
from .state import DIVERGED, SolverState, diverging, flat_gain


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
            biggest = device_cycle(state, coords, DIVERGED, model.scale, flat_gain(f_old))
        else:
            biggest = cycle(model, state, coords, flat_gain(f_old))
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


def cycle(model, state: SolverState, coords, flat: float = 0.0) -> float:
    """One sweep over ``coords``; returns the largest relative step.  A coordinate diverges
    (state.diverging) where its Newton gain is at most ``flat`` (flat_gain of the objective;
    0: only where the curvature is gone).  A backend with a ``ccd_cycle`` method (the GPU's:
    the same steps with nothing crossing to the host per coordinate, Yang2022 Fig. 3) runs the
    sweep itself instead."""
    b = state.beta
    biggest = 0.0
    for j in coords:
        if state.frozen[j]:
            continue
        g, h = model.grad_hess(j)
        delta = coordinate_step(g, h, b[j], state.lam1[j], state.lam2[j])
        delta, state.width[j] = trust_region(delta, state.width[j])
        if delta != 0.0:
            model.update(j, delta)
            b[j] += delta
            biggest = max(biggest, abs(delta) / (1.0 + abs(b[j])))
            # the cheap half of state.diverging first: most coordinates stop there
            if (delta * b[j] > 0 and abs(b[j]) * model.scale[j] > DIVERGED
                    and diverging(state, model.scale, [j], [delta], [g], [h], flat)[0]):
                state.frozen[j] = True
    return biggest
