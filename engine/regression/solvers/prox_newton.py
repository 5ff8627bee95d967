"""Proximal Newton with a diagonal Hessian in the linear predictor (glmnet's Cox algorithm).

Each outer step builds the quadratic model of -l(beta) whose Hessian in eta is replaced by its
diagonal, minimises model + penalty by coordinate descent (the backend's ``quadratic_step``:
O(nnz_j) per coordinate, or O(s) through the Gram matrix of a sparse working set), and takes
the longest step of 1, 1/2, 1/4 ... that lowers the true objective.  One O(N) risk-set pass per outer step instead of one per coordinate: this is
what makes large sparse fits fast on the CPU.
"""
from __future__ import annotations

import numpy as np

from ..priors import kkt_violators
from .state import DIVERGED, SolverState, diverging, flat_gain

_INNER_CYCLES = 500
# The inner problem is solved only as well as the outer step needs: its tolerance (a step in
# units of sqrt(objective)) follows the last outer decrease, down to _INNER_TOL_MIN.
_INNER_TOL_MIN = 1e-9
_INNER_TOL_FACTOR = 1e-2
# Strong rule: an L1 coordinate at zero whose |gradient| at the start is below this fraction of
# its penalty sits out the outer steps; the KKT check at convergence brings back any that should
# move.  Their columns are then never read again, which is what keeps N = 10^6 fits fast.
_SCREEN = 0.5
# Check the screened coordinates once the objective has nearly settled (relative change below
# _CHECK), so that late entrants join before the last digits are refined, and again at the end.
_CHECK = 1e-6
# Once the objective's relative change per step is below _REUSE the curvature barely moves:
# the backend may keep the previous step's Gram matrix (the gradient is always recomputed).
# At 1e-2 rather than 1e-3, L1 Cox at 10^5 and 10^6 x 1,000 (0.1 lambda_max) builds 3 Gram
# matrices instead of 4, in the same 13 and 10 steps, to the same objective to 1e-14.
_REUSE = 1e-2
# Converged when the objective's relative change is below tol and the line search took the
# whole step, no coefficient moving by more than _STEP * sqrt(tol) relative (1e-8 at tol =
# 1e-9), or by at most _STEP_COARSE * sqrt(tol) (1e-6) and no less than the step before
# (steps that stopped shrinking are rounding: at tol = 1e-14 the first rule asks for 3e-11).
# The steps shrink geometrically (by 5-100x each once the Gram matrix takes its secant
# correction, diagonal_step.SR1_MIN), so the error left is below the last step: a fit and its
# warm-started twin (a sensitivity grid's variant and its own engine.fit) agree to about 1e-9
# at 10^6 x 1,000, where stopping at steps of 1e-6 left 1e-7 between them.  Fits that feed a
# curve (cross-validation's folds, a path, bootstrap replicates: ``precise=False``) stop at
# steps of _STEP_COARSE * sqrt(tol): the 1e-8 rule made a 10-fold x 10-penalty
# cross-validation at 10^5 x 1,000 take 26 s instead of 18 s for digits no deviance shows.
_STEP = 3e-4
_STEP_COARSE = 0.03


def run(model, state: SolverState, tol: float, max_iter: int, progress=None,
        precise: bool = True) -> SolverState:
    """Outer steps until the objective and the coefficients settle (see _STEP; ``precise``
    False: _STEP_COARSE), or ``max_iter``.
    A ``state.gradient`` given on entry is taken as dl/dbeta at ``state.beta`` (exact at least
    on the L1 coordinates at zero) and spares the screening pass; on return it is the last KKT
    check's, at the solution, or None."""
    beta = state.beta
    state.converged = False
    known, state.gradient = state.gradient, None
    model.set_beta(beta)
    inner_tol = _INNER_TOL_FACTOR
    everything = np.flatnonzero(~state.frozen)
    # the gradient at the start screens the L1 coordinates: given when known (state.gradient)
    g = known if known is not None else model.loglik_gradient_on(_at_zero(state))[1]
    strong = _strong_set(state, g, everything)
    # a warm start (an L1 coordinate already non-zero: a previous solution, as along a path or
    # a sensitivity grid) screened near its optimum: it skips the check at _CHECK and keeps the
    # final one (a grid of 60 variants at 10^5 x 1,000: 104 gradient passes instead of 164,
    # the same 340 steps and estimates)
    checked = bool(np.any(beta[state.lam1 > 0]))
    change = np.inf
    # a step that did not lower the objective (the line search took it as within rounding)
    # asks for a fresh Gram matrix: a kept one can make a weakly determined coordinate swing
    # back and forth for good (the L1 propensity model on Eunomia's 133 covariates, a column
    # near separation on a fold's training rows: 11 of its 100 fold fits ran the 1,000 steps
    # of max_iter; its cross-validation 6.4 s -> 1.5-2.0 s).  Not a step within the coarse
    # stop (see _STEP): there the objective is flat to rounding and whether it rose is the
    # rounding's call (a change of summation order in the Gram matrix of a 10^6 x 1,000 fit
    # made its ninth step rise by 9e-16 relative, and the tenth build a fourth Gram matrix, 4%
    # of the fit)
    rose = retried = False
    last_step = np.inf
    fine = (_STEP if precise else _STEP_COARSE) * np.sqrt(tol)
    coarse = _STEP_COARSE * np.sqrt(tol)
    for _ in range(max_iter):
        coords = strong[~state.frozen[strong]]
        ll, _, delta = model.quadratic_step(coords, beta, state.lam1, state.lam2, inner_tol,
                                            _INNER_CYCLES, fresh=change > _REUSE or rose)
        f0 = state.objective(ll)
        t = 1.0
        old = beta.copy()
        for _halving in range(40):
            beta[:] = old + t * delta
            model.set_beta(beta)
            f = state.objective(model.loglik())
            if f <= f0 + model.rounding * (abs(f0) + 1.0):
                break
            t /= 2.0
        else:
            beta[:] = old
            model.set_beta(beta)
            if not retried:
                # no descent along a model whose curvature was kept or corrected: once more
                # from a fresh Gram matrix (at an unchanged beta it takes no secant correction)
                retried = rose = True
                continue
            state.converged = True      # no descent left at machine precision
            return state
        retried = False
        state.n_iter += 1
        state.history.append(f)
        if progress is not None:
            progress(state)
        inner_tol = max(_INNER_TOL_MIN, _INNER_TOL_FACTOR * np.sqrt(max(f0 - f, 0.0)))
        moved = beta - old
        state.frozen |= _diverging(model, state, moved, f)
        change = abs(f0 - f) / (abs(f) + 1.0)
        # a short step is a converged one only when the line search took it whole: one it
        # cut (the model's curvature fell below the objective's along it) says nothing
        step = np.max(np.abs(moved) / (1.0 + np.abs(beta)), initial=0.0) if t == 1.0 else np.inf
        rose = f >= f0 and step > coarse
        settled = change <= tol and (step <= fine or last_step <= step <= coarse)
        last_step = step
        if settled or (change <= _CHECK and not checked):
            checked = True
            _, g = model.loglik_gradient_on(_at_zero(state))
            # the strong rule missed some: widen it
            if kkt_violators(beta, g, state.lam1, state.frozen).any():
                strong = np.union1d(strong, _strong_set(state, g, everything))
                last_step = np.inf      # the entrants' first steps may be longer
                continue
        if settled:
            state.converged = True
            state.gradient = g      # the KKT check's at beta (on _at_zero): not recomputed
            break
    return state


def _diverging(model, state, moved, f):
    """state.diverging over every coordinate, with the gradient and curvature read (one
    coordinate at a time) only where a coefficient is large, unpenalised and moving outward."""
    out = np.zeros(moved.size, bool)
    beta = state.beta
    maybe = np.flatnonzero((np.abs(beta) * model.scale > DIVERGED) & (moved * beta > 0)
                           & (state.lam1 == 0) & (state.lam2 == 0))
    if maybe.size:
        g, h = np.array([model.grad_hess(int(j)) for j in maybe]).T
        out[maybe] = diverging(state, model.scale, maybe, moved[maybe], g, h, flat_gain(f))
    return out


def _at_zero(state):
    """The L1 coordinates at zero: the only ones whose gradient the strong rule and the KKT
    check read (a free coordinate's is the inner solve's business)."""
    return np.flatnonzero((state.beta == 0) & (state.lam1 > 0) & ~state.frozen)


def _strong_set(state, g, coords):
    """Unpenalised, non-zero, and L1 coordinates whose gradient is near their penalty."""
    keep = ((state.lam1[coords] == 0) | (state.beta[coords] != 0)
            | (np.abs(g[coords]) >= _SCREEN * state.lam1[coords]))
    return coords[keep]
