"""engine.fit and the likelihood evaluators: the public entry points of the engine.

``fit`` checks its options once (FitOptions), prepares a Problem and hands it to
``fit_problem``, which solves it for one penalty and reports a FitResult.  Drivers that refit
one cohort many times (cross-validation, bootstrap, profile likelihood) prepare the Problem once
and call ``fit_problem`` or ``Problem.solve`` themselves.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from .arguments import check_fit_arguments
from .errors import ConvergenceWarning, MonotoneLikelihoodWarning
from .options import FitOptions
from .problem import Problem
from .result import FitResult


def fit(cohort, model: str = "cox", ties: str = "breslow", penalty=None, unpenalized=(),
        cut_points=None, cause: int = 1, backend: str = "cpu", solver: str = "auto",
        tol: float = 1e-9, max_iter: int = 1000, init=None, progress=None,
        tv_route: str = "auto", censoring_strata: bool = False,
        precision: str = "float64", censoring_ties: str = "crr") -> FitResult:
    """Fit a Cox-family model to a validated cohort.

    Parameters
    ----------
    cohort : engine.Cohort
    model : "cox" | "fine_gray" | "logistic" (the 0/1 ``event`` as response, an unpenalised
        intercept "(intercept)" added; ``time`` unused)
    ties : "breslow" | "efron" (Fine-Gray: "breslow", as cmprsk::crr)
    penalty : None | engine.L1(lam) | engine.L2(lam)
        Added to -l(beta), l the summed log partial likelihood.
    unpenalized : names of covariates the penalty leaves out (e.g. the treatment); a name
        with cut points leaves out all its interval coefficients.
    cut_points : dict, covariate -> cut times: a step-function effect, one coefficient per
        interval named ``treat[0,10)``, ``treat[10,inf)`` (see engine.episodes).
    cause : fine_gray only: the cause of interest, one of ``cohort.causes``.
    backend : "cpu" | "gpu" | "auto"
    solver : "auto" (proximal Newton, exact Newton where cheap, KKT check) | "ccd" (the
        papers' cyclic coordinate descent) | "newton" | "prox_newton"; all reach one optimum.
    tol : relative change of the objective (and Newton decrement) that counts as converged.
    max_iter : most CCD cycles or outer (proximal) Newton steps.
    init : starting coefficients (array in ``cohort.names`` order); zeros by default.
    progress : callable(state) called after each cycle, for progress bars.
    tv_route : "auto" | "counting" | "strata": how cut-point episodes are scanned (both give
        the same fit; "strata" needs entry at time 0).
    censoring_strata : fine_gray only: one censoring Kaplan-Meier per stratum (default: one
        for all rows).
    precision : "float64" | "float32" (Cox on the GPU only: the scans in single precision,
        for screening; coefficients then agree with float64 to within 2e-4 of max |beta|,
        typically 1e-6, see engine/backends/cox_gpu.py; ``tol`` is raised to at least 1e-6,
        below which single precision cannot settle).
    censoring_ties : fine_gray only: who is at risk for a censoring tied with an event in the
        censoring Kaplan-Meier G: "crr" (cmprsk::crr: the event is) or "finegray" (R survival
        finegray(), Geskus 2011: it is not; weights G(t-)/G(s-)). Named in the summary.

    Returns
    -------
    FitResult
    """
    t0 = time.perf_counter()
    check_fit_arguments(cohort, init)
    options = FitOptions(model=model, ties=ties, backend=backend, solver=solver,
                         precision=precision, tol=tol, max_iter=max_iter, cause=cause,
                         censoring_strata=censoring_strata, tv_route=tv_route,
                         censoring_ties=censoring_ties)
    problem = Problem.from_cohort(cohort, options, unpenalized, cut_points)
    return fit_problem(problem, penalty, init=init, progress=progress, t0=t0)


def fit_problem(problem: Problem, penalty, init=None, progress=None, t0=None) -> FitResult:
    """``fit`` on a prepared Problem (which keeps its sorted layout and its case weights): solve
    for ``penalty`` from ``init`` and report.  Unpenalised aliased columns are held at zero
    and reported as NaN; diverging ones as +/-inf, each with a warning naming them."""
    t0 = time.perf_counter() if t0 is None else t0
    m, cohort, o = problem.model, problem.cohort, problem.options
    lam1, lam2 = problem.penalty_vectors(penalty)
    aliased = problem.aliased((lam1 == 0) & (lam2 == 0))
    fixed = None
    if aliased.any():
        fixed = aliased
        init = np.where(aliased, 0.0, 0.0 if init is None else np.asarray(init, float))
    t1 = time.perf_counter()
    state = problem.solve(lam1, lam2, init, fixed, progress=progress)
    t2 = time.perf_counter()
    ll = m.loglik()

    names = pd.Index(m.names, name="covariate")
    coef = pd.Series(state.beta.copy(), index=names, name="coef")
    coef[aliased] = np.nan
    runaway = state.frozen if fixed is None else state.frozen & ~np.asarray(fixed, bool)
    diverged = [m.names[j] for j in np.flatnonzero(runaway)]
    if diverged:
        coef[diverged] = np.sign(coef[diverged]) * np.inf
        warnings.warn(f"monotone likelihood: the coefficient(s) of {', '.join(diverged)} diverge "
                      "(a covariate level with no events, or one that predicts every event "
                      "order); reported as +/-inf. Remove or merge the column, or add a penalty.",
                      MonotoneLikelihoodWarning, stacklevel=3)
    if not state.converged:
        warnings.warn(f"not converged after {state.n_iter} iterations (tol={o.tol}); raise "
                      "max_iter or loosen tol.", ConvergenceWarning, stacklevel=3)
    spec = {
        "model": o.model, "ties": o.ties, "penalty": _describe(penalty),
        "unpenalized": list(problem.unpenalized), "backend": m.backend.name,
        "precision": o.precision, "solver": o.solver, "tol": o.tol,
        "strata": list(getattr(cohort, "strata_columns", ()) or ()),
        "n_strata": int(getattr(cohort, "n_strata", 1) or 1),
        "source": dict(getattr(cohort, "source", {}) or {}),
        "cut_points": problem.cut_points, "episodes": cohort.n,
    }
    if o.model == "fine_gray":
        spec.update(cause=m.cause, censoring_strata=m.censoring_strata,
                    censoring_ties=m.censoring_ties, variance="sandwich")
    return FitResult(
        coef=coef, loglik=float(ll), converged=bool(state.converged), n_iter=state.n_iter,
        timings={"prepare": t1 - t0, "solve": t2 - t1, "total": time.perf_counter() - t0},
        penalized=pd.Series((lam1 > 0) | (lam2 > 0), index=names, name="penalized"),
        diverged=diverged, spec=spec, n=problem.n_rows, n_events=problem.n_events,
        history=list(state.history), problem=problem, beta=state.beta.copy(), penalty=penalty)


def loglik(cohort, beta, ties: str = "breslow", model: str = "cox", cause: int = 1,
           censoring_strata: bool = False, censoring_ties: str = "crr") -> float:
    """Log partial (Fine-Gray: pseudo) likelihood of ``cohort`` at ``beta`` (array in
    ``cohort.names`` order)."""
    m = _model_at(cohort, beta, ties, model, cause, censoring_strata, censoring_ties)
    return float(m.loglik())


def gradient(cohort, beta, ties: str = "breslow", model: str = "cox", cause: int = 1,
             censoring_strata: bool = False, censoring_ties: str = "crr") -> np.ndarray:
    """Gradient of the log partial (pseudo) likelihood at ``beta``: O(N + nnz) for all
    coordinates."""
    m = _model_at(cohort, beta, ties, model, cause, censoring_strata, censoring_ties)
    return m.loglik_gradient()[1]


def _model_at(cohort, beta, ties, model, cause=1, censoring_strata=False, censoring_ties="crr"):
    options = FitOptions(model=model, ties=ties, cause=cause, censoring_strata=censoring_strata,
                         censoring_ties=censoring_ties)
    problem = Problem.from_cohort(cohort, options)
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape != (problem.p,):
        raise ValueError(f"beta must have {problem.p} values (one per covariate), got "
                         f"{beta.shape}")
    problem.set_beta(beta)
    return problem.model


def _describe(penalty) -> str:
    return "none" if penalty is None else f"{type(penalty).__name__}({penalty.lam:g})"
