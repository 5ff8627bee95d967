"""Newton-Raphson on the free coordinates, with step halving (as R's coxph).

Used to finish what CCD started (quadratic convergence to the optimum's last digits) and on its
own for smooth objectives.  Free coordinates are the unfrozen ones that are unpenalised by L1
or already non-zero; an L1 coordinate that would cross zero stops there and leaves the set.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la

from .state import SolverState, diverging, flat_gain

# Largest move of x_j * beta_j in one Newton step (a trust region against runaway directions).
_MAX_MOVE = 10.0


def run(model, state: SolverState, tol: float, max_iter: int = 50, progress=None) -> SolverState:
    """Newton steps until the Newton decrement is below ``tol * (1 + |f|)``."""
    beta = state.beta
    state.converged = False
    model.set_beta(beta)
    for _ in range(max_iter):
        free = ~state.frozen & ((state.lam1 == 0.0) | (beta != 0.0))
        S = np.flatnonzero(free)
        if S.size == 0:
            state.converged = True
            break
        ll, g, info = model.information(S)
        b = beta[S].copy()
        lam1, lam2 = state.lam1[S], state.lam2[S]
        G = -g + lam2 * b + lam1 * np.sign(b)
        H = info + np.diag(lam2)
        direction = _solve(H, -G)
        decrement = float(-G @ direction)
        f0 = state.objective(ll)

        t = 1.0
        move = np.max(np.abs(direction) * model.scale[S])
        if move > _MAX_MOVE:
            t = _MAX_MOVE / move
        crossing = (lam1 > 0) & (np.sign(b + t * direction) != np.sign(b))
        to_zero = np.full(S.size, np.inf)     # step length at which an L1 coordinate hits 0
        to_zero[crossing] = -b[crossing] / direction[crossing]
        t = min(t, float(to_zero.min()))
        for _halving in range(40):
            new = b + t * direction
            new[to_zero <= t * (1.0 + 1e-12)] = 0.0
            beta[S] = new
            model.set_beta(beta)
            ll = model.loglik()
            f = state.objective(ll)
            if f <= f0 + model.rounding * (abs(f0) + 1.0):
                break
            t /= 2.0
        else:
            beta[S] = b
            model.set_beta(beta)
            state.converged = True   # no descent left at machine precision
            break
        state.n_iter += 1
        state.history.append(f)
        if progress is not None:
            progress(state)
        state.frozen[S[diverging(state, model.scale, S, new - b, g, np.diag(info),
                                 flat_gain(f))]] = True
        if 0.0 <= decrement <= tol * (abs(f) + 1.0) and not crossing.any():
            state.converged = True
            break
    return state


def _solve(H: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """H^-1 rhs by Cholesky; least squares where H is singular (collinear columns)."""
    try:
        return la.cho_solve(la.cho_factor(H, lower=True), rhs)
    except la.LinAlgError:
        return np.linalg.lstsq(H, rhs, rcond=None)[0]

