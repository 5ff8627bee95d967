"""Solvers: the papers' CCD, Newton-Raphson, and ``auto``.

All reach the same optimum.  ``auto`` (the default) runs proximal Newton (glmnet's diagonal
approximation, O(nnz_j) per inner coordinate, one O(N) scan per outer step), adds exact Newton
steps on the free coordinates where they are cheap (quadratic convergence: exact to the printed
digits), then checks the optimality (KKT) conditions of every coordinate with one O(N + nnz)
gradient, and goes round again if a zero wants to move.  Without L1, where the information is
cheap, it is Newton from the start.
``ccd`` sweeps every coordinate each cycle exactly as the papers do.
"""
from __future__ import annotations

import numpy as np

from . import ccd, newton, prox_newton
from ..priors import kkt_violators
from .state import SolverState

SOLVERS = ("auto", "ccd", "newton", "prox_newton")

# Newton's information matrix costs about events * s^2 flops for s free coordinates: always
# worth it below _NEWTON_CHEAP (exact to the last digits for little), and up to _NEWTON_BUDGET
# when proximal Newton did not converge.
_NEWTON_CHEAP = 2e8
_NEWTON_BUDGET = 5e10
_NEWTON_MAX_FREE = 2000


def solve(model, state: SolverState, solver: str, tol: float, max_iter: int,
          n_events: int, progress=None, precise: bool = True) -> SolverState:
    """Minimise -l(beta) + penalty from ``state.beta`` with the chosen solver.
    ``state.gradient``, given at the start, spares proximal Newton's screening pass; on return
    it is dl/dbeta at the solution (exact at least on the L1 coordinates at zero), or None.
    ``precise`` False: proximal Newton's coarser stop, for fits that feed a curve
    (prox_newton._STEP_COARSE)."""
    if solver in ("ccd", "newton"):
        state.gradient = None       # neither screens nor keeps it
    if solver == "ccd":
        ccd.run(model, state, tol, max_iter, progress)
    elif solver == "newton":
        if np.any(state.lam1 > 0):
            raise ValueError("solver='newton' needs a smooth objective and L1 is not smooth at "
                             "zero; use solver='auto' (proximal Newton, then Newton) or 'ccd'.")
        newton.run(model, state, tol, max_iter, progress)
    elif solver == "prox_newton":
        prox_newton.run(model, state, tol, max_iter, progress, precise)
    elif solver == "auto":
        _auto(model, state, tol, max_iter, n_events, progress, precise)
    else:
        raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")
    _mark_monotone(model, state)
    return state


def _auto(model, state, tol, max_iter, n_events, progress, precise):
    """Proximal Newton over every coordinate, exact Newton on the free ones where that is cheap
    (or where proximal Newton stalled), and an O(N + nnz) KKT check of the zeros; again while
    some zero wants to move.  A smooth objective (no L1) whose information is cheap goes to
    Newton at once, as R's coxph: proximal Newton's steps before it bought nothing there (a
    200-row bootstrap replicate of 3 columns: 4-5 of them, three quarters of its time)."""
    free = np.count_nonzero(~state.frozen)
    if (not np.any(state.lam1 > 0) and free <= _NEWTON_MAX_FREE
            and n_events * free * free <= _NEWTON_CHEAP):
        newton.run(model, state, tol, max_iter, progress)
        if state.converged:
            state.gradient = model.loglik_gradient()[1]
            return state
    for _round in range(20):
        prox_newton.run(model, state, tol, max_iter, progress, precise)
        free = np.count_nonzero(~state.frozen & ((state.lam1 == 0) | (state.beta != 0)))
        cost = n_events * free * free
        g = state.gradient
        if free <= _NEWTON_MAX_FREE and (cost <= _NEWTON_CHEAP or
                                         (not state.converged and cost <= _NEWTON_BUDGET)):
            newton.run(model, state, tol, 50, progress)
            g = None
        if g is None:
            _, g = model.loglik_gradient()
        state.gradient = g          # at beta: the next round's (or the next solve's) screen
        if (state.converged
                and not kkt_violators(state.beta, g, state.lam1, state.frozen).any()):
            return state
        state.converged = False
    return state


def _mark_monotone(model, state):
    """Freeze large unpenalised coefficients along which the likelihood is flat or still rising.

    A finite estimate loses likelihood when doubled; one of a monotone likelihood does not.
    """
    big = np.flatnonzero(~state.frozen & (state.lam1 == 0) & (state.lam2 == 0)
                         & (np.abs(state.beta) * model.scale > 10.0))
    if big.size == 0:
        return
    ll = model.loglik()
    for j in big:
        b = state.beta[j]
        model.update(j, b)
        if model.loglik() >= ll - 1e-8 * (1.0 + abs(ll)):
            state.frozen[j] = True
        model.update(j, -b)
