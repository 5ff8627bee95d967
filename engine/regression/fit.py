"""engine.fit and the likelihood evaluators: the public entry points of the engine.

``fit`` checks its options once (``options.fit_options`` builds the FitOptions), prepares a
Problem and hands it to ``fit_problem``, which solves it for one penalty and reports a
FitResult.  Drivers that refit one cohort many times (cross-validation, bootstrap, profile
likelihood) prepare the Problem once and call ``fit_problem`` or ``Problem.solve`` themselves.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from ..core.arguments import check_fit_arguments, check_progress
from ..core.errors import Cancelled, ConvergenceWarning, MonotoneLikelihoodWarning
from .options import fit_options
from .problem import Problem
from .variance import choose as choose_variance
from .result import FitResult


def fit(cohort, model: str = "cox", penalty=None, unpenalized=(), init=None, progress=None,
        cancel=None, **options) -> FitResult:
    """Fit a Cox-family model to a validated cohort.

    Parameters
    ----------
    cohort : engine.Cohort
    model : "cox" | "fine_gray" | "logistic" (the 0/1 ``event`` as response, an unpenalised
        intercept "(intercept)" added; ``time`` unused) | "poisson" (the events of each row
        over its person-time stop - start, of ``cause`` under competing risks; an
        unpenalised intercept, the log rate, added; exp(coef): incidence rate ratios) |
        "sccs" (an engine.SccsData)
    penalty : None | engine.L1(lam) | engine.L2(lam)
        Added to -l(beta), l the summed log partial likelihood.
    unpenalized : names of covariates the penalty leaves out (e.g. the treatment); a name
        with cut points leaves out all its interval coefficients.
    init : starting coefficients (array in ``cohort.names`` order); zeros by default.
    progress : callable(done, total) after each solver iteration: ``done`` iterations of at
        most ``total`` = max_iter (for progress bars).
    cancel : threading.Event-like; once set the fit stops after its current iteration with
        engine.Cancelled.
    **options : the fields of engine.FitOptions, each checked there: ties ("breslow" |
        "efron"), cut_points, bands (Poisson: the piecewise-exponential model), cause
        (Fine-Gray, Poisson) and censoring_strata (Fine-Gray),
        backend, solver, tol, max_iter, tv_route, precision, variance, cluster,
        censoring_ties, ...
    variance : "auto" | "model" | "robust": which variance ``se``, ``cov`` and the summary
        show (both are kept: ``se_model``, ``se_robust``).  Robust is Lin and Wei's sandwich
        (Cox), Huber-White (logistic, Poisson), clustered by case (SCCS) and Fine and Gray's
        own sandwich (Fine-Gray).  "auto" shows the robust one for non-integer weights, a given
        ``cluster``, Cox subjects with several events, logistic subjects with several rows and
        Fine-Gray; the model-based one otherwise (engine.regression.variance).
    cluster : None, or one value per cohort row (e.g. ``df["site"]``): the clusters of the
        robust variance.  Default: the cohort's ``id`` (SCCS: the case), else each row.
    censoring_ties : fine_gray only: who is at risk for a censoring tied with an event in the
        censoring Kaplan-Meier G: "crr" (cmprsk::crr: the event is) or "finegray" (R survival
        finegray(), Geskus 2011: it is not; weights G(t-)/G(s-)). Named in the summary.

    Returns
    -------
    FitResult
    """
    t0 = time.perf_counter()
    check_fit_arguments(cohort, init)
    o = fit_options("fit", model, options)
    problem = Problem.from_cohort(cohort, o, unpenalized)
    res = fit_problem(problem, penalty, init=init, progress=progress, cancel=cancel, t0=t0)
    problem.model.release_scratch()
    return res


def fit_problem(problem: Problem, penalty, init=None, progress=None, cancel=None,
                cancelled: str = "fit cancelled", t0=None, precise: bool = True) -> FitResult:
    """``fit`` on a prepared Problem (which keeps its sorted layout and its case weights): solve
    for ``penalty`` from ``init`` and report.  Unpenalised aliased columns are held at zero
    and reported as NaN; diverging ones as +/-inf, each with a warning naming them.
    ``progress`` and ``cancel`` as ``fit``; a cancelled solve raises
    engine.Cancelled("<cancelled>, iteration <n>").  ``precise`` False: the coarser stop of
    fits that feed a curve (a cross-validation fold, a path, a bootstrap replicate)."""
    t0 = time.perf_counter() if t0 is None else t0
    check_progress(progress)
    m, cohort, o = problem.model, problem.cohort, problem.options
    lam1, lam2 = problem.penalty_vectors(penalty)
    aliased = problem.aliased((lam1 == 0) & (lam2 == 0))
    fixed = None
    if aliased.any():
        fixed = aliased
        init = np.where(aliased, 0.0, 0.0 if init is None else np.asarray(init, float))
    t1 = time.perf_counter()
    state = problem.solve(lam1, lam2, init, fixed,
                          progress=on_iteration(progress, cancel, problem.options.max_iter,
                                                cancelled), precise=precise)
    t2 = time.perf_counter()
    ll = m.loglik()

    values = state.beta.copy()          # NumPy first: a pandas masked set costs a small fit 25%
    values[aliased] = np.nan
    runaway = state.frozen if fixed is None else state.frozen & ~np.asarray(fixed, bool)
    values[runaway] = np.sign(values[runaway]) * np.inf
    diverged = [m.names[j] for j in np.flatnonzero(runaway)]
    names = pd.Index(m.names, name="covariate")
    coef = pd.Series(values, index=names, name="coef")
    if diverged:
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
        "bands": list(o.bands or ()),
    }
    if o.model == "fine_gray":
        spec.update(cause=m.cause, censoring_strata=m.censoring_strata,
                    censoring_ties=m.censoring_ties)
    if o.model == "poisson":
        spec.update(cause=m.cause)
    codes, n_clusters, cluster_label = problem.clusters
    spec.update(variance=choose_variance(o.variance, o.model, cohort, o.cluster, codes,
                                        n_clusters),
                cluster=cluster_label, n_clusters=n_clusters)
    return FitResult(
        coef=coef, loglik=float(ll), converged=bool(state.converged), n_iter=state.n_iter,
        timings={"prepare": t1 - t0, "solve": t2 - t1, "total": time.perf_counter() - t0},
        penalized=pd.Series((lam1 > 0) | (lam2 > 0), index=names, name="penalized"),
        diverged=diverged, spec=spec, n=problem.n_rows, n_events=problem.n_events,
        history=list(state.history), problem=problem, beta=state.beta.copy(), penalty=penalty,
        formula=getattr(cohort, "formula", None))


def loglik(cohort, beta, model: str = "cox", **options) -> float:
    """Log partial (Fine-Gray: pseudo) likelihood of ``cohort`` at ``beta`` (array in
    ``cohort.names`` order); ``options`` as engine.fit (ties, cause, censoring_strata, ...)."""
    return float(_model_at(cohort, beta, fit_options("loglik", model, options)).loglik())


def gradient(cohort, beta, model: str = "cox", **options) -> np.ndarray:
    """Gradient of the log partial (pseudo) likelihood at ``beta``: O(N + nnz) for all
    coordinates; ``options`` as engine.fit."""
    return _model_at(cohort, beta, fit_options("gradient", model, options)).loglik_gradient()[1]


def on_iteration(progress, cancel, total: int, cancelled: str):
    """The solver's per-iteration callback (None when there is nothing to do): report
    ``progress(n_iter, total)``, then raise engine.Cancelled("<cancelled>, iteration <n>")
    once ``cancel`` is set, so a long fit stops after its current iteration."""
    if progress is None and cancel is None:
        return None

    def step(state):
        if progress is not None:
            progress(state.n_iter, total)
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"{cancelled}, iteration {state.n_iter}")
    return step


def _model_at(cohort, beta, options):
    problem = Problem.from_cohort(cohort, options)
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape != (problem.p,):
        raise ValueError(f"beta must have {problem.p} values (one per covariate), got "
                         f"{beta.shape}")
    problem.set_beta(beta)
    return problem.model


def _describe(penalty) -> str:
    return "none" if penalty is None else f"{type(penalty).__name__}({penalty.lam:g})"
