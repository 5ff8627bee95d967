"""engine.fit and the likelihood evaluators: the public entry points of the engine."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import collinearity
from .episodes import interval_names, split_at_cut_points
from .errors import ConvergenceWarning, DataWarning, MonotoneLikelihoodWarning
from .models.cox import CoxModel
from .models.fine_gray import FineGrayModel
from .models.logistic import LogisticModel
from .priors import L1, L2
from .result import FitResult
from .solvers import SolverState, solve

# The collinearity check costs sum over rows of (unpenalised non-zeros in the row)^2.
_ALIAS_CHECK_BUDGET = 5e8

MODELS = ("cox", "fine_gray", "logistic")
PRECISIONS = ("float64", "float32")
FLOAT32_TOL = 1e-6


def fit(cohort, model: str = "cox", ties: str = "breslow", penalty=None, unpenalized=(),
        cut_points=None, cause: int = 1, backend: str = "cpu", solver: str = "auto",
        tol: float = 1e-9, max_iter: int = 1000, init=None, progress=None,
        tv_route: str = "auto", censoring_strata: bool = False,
        precision: str = "float64") -> FitResult:
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
        typically 1e-6, see engine/backends/gpu.py; ``tol`` is raised to at least 1e-6,
        below which single precision cannot settle).

    Returns
    -------
    FitResult
    """
    if model not in MODELS:
        raise ValueError(f"model={model!r} is not available; survscan fits {MODELS} so far.")
    if not (isinstance(tol, float | int) and 0 < tol < 1):
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "float32":
        tol = max(tol, FLOAT32_TOL)
    t0 = time.perf_counter()
    prepared = _prepare(cohort, model, ties, unpenalized, cut_points, backend, tv_route, cause,
                        censoring_strata, precision)
    return _fit_prepared(prepared, penalty, init=init, solver=solver, tol=tol,
                         max_iter=max_iter, progress=progress, t0=t0)


@dataclass
class _Prepared:
    """A cohort sorted once into a model, ready for many fits (penalty path, folds, profile)."""

    model: CoxModel | FineGrayModel | LogisticModel
    cohort: object          # after cut points
    spec: dict              # model, ties, unpenalized, cut_points
    n_rows: int             # rows of the caller's cohort
    n_events: int
    aliased: dict = field(default_factory=dict)   # unpenalised columns -> aliased ones found


def _prepare(cohort, model="cox", ties="breslow", unpenalized=(), cut_points=None,
             backend="cpu", tv_route="auto", cause=1, censoring_strata=False,
             precision="float64") -> _Prepared:
    """Split at cut points and sort: the part of ``fit`` that does not depend on the penalty."""
    n_rows, n_events = cohort.n, cohort.n_events
    if cut_points:
        if model == "logistic":
            raise ValueError("cut_points split survival episodes; logistic regression has "
                             "none. Fit without cut_points.")
        if model == "fine_gray":
            raise ValueError("cut_points need counting-process episodes, which Fine-Gray (one "
                             "row per subject) does not take; fit model='cox' for them.")
        cohort = split_at_cut_points(cohort, cut_points, tv_route)
        unpenalized = _expand_split_names(unpenalized, cut_points, cohort.names)
    elif isinstance(unpenalized, str):
        unpenalized = [unpenalized]
    m = _make_model(cohort, model, ties, backend, cause, censoring_strata, precision)
    unpenalized = list(dict.fromkeys([*getattr(m, "unpenalized", ()), *unpenalized]))
    spec = {"model": model, "ties": ties, "unpenalized": list(unpenalized),
            "cut_points": cut_points or {}, "precision": precision}
    if model == "fine_gray":
        n_events = m.n_events
        spec.update(cause=m.cause, censoring_strata=m.censoring_strata, variance="sandwich")
    return _Prepared(model=m, cohort=cohort, spec=spec, n_rows=n_rows, n_events=n_events)


def _solve_model(m, lam1, lam2, init, fixed, solver, tol, max_iter, n_events, progress=None):
    """Minimise -l + penalty on a prepared model from ``init``; coordinates in ``fixed`` stay
    at their ``init`` values (a profile likelihood, or an offset)."""
    beta = np.zeros(m.p) if init is None else np.array(init, dtype=np.float64)
    if beta.shape != (m.p,):
        raise ValueError(f"init must have {m.p} values (one per covariate), got {beta.shape}")
    frozen = np.zeros(m.p, bool) if fixed is None else np.array(fixed, dtype=bool)
    m.set_beta(beta)
    state = SolverState(beta=beta, lam1=lam1, lam2=lam2, frozen=frozen)
    solve(m, state, solver, tol, max_iter, n_events, progress)
    m.set_beta(state.beta)
    return state


def _fit_prepared(prepared, penalty, init=None, solver="auto", tol=1e-9, max_iter=1000,
                  progress=None, fixed=None, t0=None) -> FitResult:
    """``fit`` on a prepared model: the model keeps its sorted layout (and its case weights)."""
    t0 = time.perf_counter() if t0 is None else t0
    m, cohort = prepared.model, prepared.cohort
    lam1, lam2 = _penalty_vectors(m.names, penalty, prepared.spec["unpenalized"])
    aliased = _aliased(prepared, (lam1 == 0) & (lam2 == 0))
    if aliased.any():
        fixed = aliased if fixed is None else np.asarray(fixed, bool) | aliased
        init = np.where(aliased, 0.0, 0.0 if init is None else np.asarray(init, float))
    t1 = time.perf_counter()
    state = _solve_model(m, lam1, lam2, init, fixed, solver, tol, max_iter, prepared.n_events,
                         progress)
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
        warnings.warn(f"not converged after {state.n_iter} iterations (tol={tol}); raise "
                      "max_iter or loosen tol.", ConvergenceWarning, stacklevel=3)
    spec = {
        "model": prepared.spec["model"], "ties": prepared.spec["ties"],
        "penalty": _describe(penalty), "unpenalized": list(prepared.spec["unpenalized"]),
        "backend": m.backend.name, "precision": prepared.spec.get("precision", "float64"),
        "solver": solver,
        "tol": tol, "strata": list(getattr(cohort, "strata_columns", ()) or ()),
        "n_strata": int(getattr(cohort, "n_strata", 1) or 1),
        "source": dict(getattr(cohort, "source", {}) or {}),
        "cut_points": prepared.spec["cut_points"], "episodes": cohort.n,
        **{key: prepared.spec[key] for key in ("cause", "censoring_strata", "variance")
           if key in prepared.spec},
    }
    return FitResult(
        coef=coef, loglik=float(ll), converged=bool(state.converged), n_iter=state.n_iter,
        timings={"prepare": t1 - t0, "solve": t2 - t1, "total": time.perf_counter() - t0},
        penalized=pd.Series((lam1 > 0) | (lam2 > 0), index=names, name="penalized"),
        diverged=diverged, spec=spec, n=prepared.n_rows, n_events=int(prepared.n_events),
        history=list(state.history), _model=m, _beta=state.beta.copy(), _penalty=penalty)


def _aliased(prepared, unpenalised) -> np.ndarray:
    """Unpenalised columns that are combinations of earlier ones (engine.collinearity): held
    at zero and reported as NaN, with a warning naming them and their partners.  Skipped when
    the check would cost more than a fit (many dense unpenalised columns)."""
    m, cohort = prepared.model, prepared.cohort
    out = np.zeros(m.p, bool)
    cols = [j for j, name in enumerate(cohort.names)
            if name in m.names and unpenalised[m.names.index(name)]]
    if not cols:
        return out
    key = tuple(cols)
    if key not in prepared.aliased:
        X = cohort.X[:, cols]
        row_nnz = np.diff(X.tocsr().indptr).astype(float)
        found = (collinearity.aliased_columns(cohort, np.asarray(cols))
                 if float(row_nnz @ row_nnz) <= _ALIAS_CHECK_BUDGET else [])
        prepared.aliased[key] = found
        for col, partners in found:
            with_ = (f"a linear combination of {', '.join(cohort.names[q] for q in partners)}"
                     if partners else "constant within every stratum")
            warnings.warn(f"covariate {cohort.names[col]!r} is {with_} (collinear): its "
                          "coefficient cannot be estimated and is reported as NaN. Remove it, "
                          "or penalise it.", DataWarning, stacklevel=4)
    for col, _ in prepared.aliased[key]:
        out[m.names.index(cohort.names[col])] = True
    return out


def loglik(cohort, beta, ties: str = "breslow", model: str = "cox", cause: int = 1,
           censoring_strata: bool = False) -> float:
    """Log partial (Fine-Gray: pseudo) likelihood of ``cohort`` at ``beta`` (array in
    ``cohort.names`` order)."""
    m = _model_at(cohort, beta, ties, model, cause, censoring_strata)
    return float(m.loglik())


def gradient(cohort, beta, ties: str = "breslow", model: str = "cox", cause: int = 1,
             censoring_strata: bool = False) -> np.ndarray:
    """Gradient of the log partial (pseudo) likelihood at ``beta``: O(N + nnz) for all
    coordinates."""
    m = _model_at(cohort, beta, ties, model, cause, censoring_strata)
    return m.loglik_gradient()[1]


def _make_model(cohort, model, ties, backend, cause, censoring_strata, precision="float64"):
    if model not in MODELS:
        raise ValueError(f"model={model!r} is not available; survscan fits {MODELS} so far.")
    if precision != "float64" and model != "cox":
        raise ValueError(f"precision={precision!r} is available for model='cox' on the GPU "
                         "only; use precision='float64'.")
    if model != "logistic" and getattr(cohort, "binary_outcome", False):
        raise ValueError(f"model={model!r} needs follow-up times, but the cohort was built with "
                         "time=None (a binary outcome): fit model='logistic', or rebuild the "
                         "cohort with time=.")
    if model == "fine_gray":
        return FineGrayModel(cohort, cause=cause, ties=ties, backend=backend,
                             censoring_strata=censoring_strata)
    if model == "logistic":
        return LogisticModel(cohort, backend=backend)
    return CoxModel(cohort, ties=ties, backend=backend, precision=precision)


def _model_at(cohort, beta, ties, model, cause=1, censoring_strata=False):
    m = _make_model(cohort, model, ties, "cpu", cause, censoring_strata)
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape != (m.p,):
        raise ValueError(f"beta must have {m.p} values (one per covariate), got {beta.shape}")
    m.set_beta(beta)
    return m


def _expand_split_names(unpenalized, cut_points, names):
    """An unpenalised covariate with cut points leaves all its interval columns unpenalised."""
    unpenalized = [unpenalized] if isinstance(unpenalized, str) else list(unpenalized)
    out = []
    for u in unpenalized:
        out.extend(interval_names(u, cut_points[u]) if u in cut_points else [u])
    return out


def _penalty_vectors(names, penalty, unpenalized):
    """Per-coordinate L1 and L2 strengths, zero for the unpenalised names."""
    p = len(names)
    if penalty is not None and not isinstance(penalty, L1 | L2):
        raise ValueError(f"penalty must be None, engine.L1(lam) or engine.L2(lam), got {penalty!r}")
    if isinstance(unpenalized, str):
        unpenalized = [unpenalized]
    unknown = [u for u in unpenalized if u not in names]
    if unknown:
        raise ValueError(f"unpenalized names {unknown} are not covariates of this cohort; "
                         f"known: {names[:20]}{' ...' if p > 20 else ''}")
    lam1 = np.full(p, penalty.l1 if penalty is not None else 0.0)
    lam2 = np.full(p, penalty.l2 if penalty is not None else 0.0)
    idx = [names.index(u) for u in unpenalized]
    lam1[idx] = 0.0
    lam2[idx] = 0.0
    return lam1, lam2


def _describe(penalty) -> str:
    return "none" if penalty is None else f"{type(penalty).__name__}({penalty.lam:g})"
