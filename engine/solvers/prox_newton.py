"""Proximal Newton with a diagonal Hessian in the linear predictor (glmnet's Cox algorithm).

Each outer step builds the quadratic model of -l(beta) whose Hessian in eta is replaced by its
diagonal, minimises model + penalty by coordinate descent at O(nnz_j) per coordinate (the
backend's ``quadratic_step``), and takes the longest step of 1, 1/2, 1/4 ... that lowers the
true objective.  One O(N) risk-set pass per outer step instead of one per coordinate: this is
what makes large sparse fits fast on the CPU.
"""
from __future__ import annotations

import numpy as np

from .ccd import DIVERGED, SolverState

_INNER_CYCLES = 500
# The inner problem is solved only as well as the outer step needs: its tolerance (a step in
# units of sqrt(objective)) follows the last outer decrease, down to _INNER_TOL_MIN.
_INNER_TOL_MIN = 1e-9
_INNER_TOL_FACTOR = 1e-2
# Strong rule: an L1 coordinate at zero with |gradient| below this fraction of its penalty sits
# out the inner loop; a KKT check at convergence brings it back (and stops screening) if needed.
_SCREEN = 0.5


def run(model, state: SolverState, tol: float, max_iter: int, progress=None,
        coords=None) -> SolverState:
    """Outer steps until the objective changes by less than ``tol`` relative, or ``max_iter``."""
    beta = state.beta
    all_coords = np.arange(beta.size) if coords is None else np.asarray(coords)
    state.converged = False
    model.set_beta(beta)
    inner_tol = _INNER_TOL_FACTOR
    screen = _SCREEN
    for _ in range(max_iter):
        active = all_coords[~state.frozen[all_coords]]
        ll, _, delta = model.quadratic_step(active, beta, state.lam1, state.lam2, inner_tol,
                                            _INNER_CYCLES, screen)
        f0 = state.objective(ll)
        t = 1.0
        old = beta.copy()
        for _halving in range(40):
            beta[:] = old + t * delta
            model.set_beta(beta)
            f = state.objective(model.loglik())
            if f <= f0 + 1e-12 * (abs(f0) + 1.0):
                break
            t /= 2.0
        else:
            beta[:] = old
            model.set_beta(beta)
            state.converged = True      # no descent left at machine precision
            return state
        state.n_iter += 1
        state.history.append(f)
        if progress is not None:
            progress(state)
        inner_tol = max(_INNER_TOL_MIN, _INNER_TOL_FACTOR * np.sqrt(max(f0 - f, 0.0)))
        moved = beta - old
        runaway = ((np.abs(beta) * model.scale > DIVERGED) & (moved * beta > 0)
                   & (state.lam1 == 0) & (state.lam2 == 0))
        state.frozen |= runaway
        small = np.max(np.abs(moved) / (1.0 + np.abs(beta)), initial=0.0) <= 10.0 * tol
        if abs(f0 - f) <= tol * (abs(f) + 1.0) and small:
            if screen > 0 and _screened_out_wrongly(model, state, active):
                screen = 0.0     # a screened coordinate wants to move: sweep them all
                continue
            state.converged = True
            break
    return state


def _screened_out_wrongly(model, state, coords) -> bool:
    """Does a zero L1 coordinate among ``coords`` break its optimality condition |g_j| <= lam?"""
    _, g = model.loglik_gradient()
    zero = coords[(state.beta[coords] == 0) & (state.lam1[coords] > 0)]
    return bool(np.any(np.abs(g[zero]) > state.lam1[zero] * (1 + 1e-9) + 1e-12))
