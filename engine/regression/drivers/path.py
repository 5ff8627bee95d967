"""The regularisation path: fits along a decreasing grid of penalty strengths, glmnet-style.

``lambda_max`` is the smallest L1 strength that keeps every penalised coefficient at zero:
max |dl/dbeta_j| over the penalised j at the fit of the unpenalised ones alone.  The default
grid is ``points`` strengths log-spaced from lambda_max down to ``span`` x lambda_max; every fit
starts from the one before (warm starts) on one Problem, sorted once.  Cross-validation walks
the same grid (engine.cross_validate), so its curve and the path plot line up.

The deviance ratio of each fit is (l - l_0) / (l_sat - l_0), glmnet's 1 - deviance / null
deviance: l_0 the log-likelihood at lambda_max (every penalised coefficient zero, the
unpenalised ones fitted; glmnet's null model when nothing but the intercept is unpenalised), and
l_sat the saturated log-likelihood: 0 for logistic regression, and for Cox and Fine-Gray
-sum_k d_k log d_k over the distinct event times k of each stratum, d_k their weighted events
(glmnet's and scikit-survival's, exact for Breslow ties).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.errors import Cancelled
from ..fit import fit_problem
from ..options import fit_options
from ..priors import L1, L2
from ..problem import Problem

PENALTIES = {"l1": L1, "l2": L2}
GRID_POINTS = 10
GRID_SPAN = 1e-3


@dataclass
class PathResult:
    """What ``engine.path`` returns.

    lambdas : (k,) penalty strengths, decreasing
    coef : DataFrame, one row per lambda, one column per covariate
    loglik, dev_ratio : (k,) log-likelihood (penalty not included) and deviance ratio
    df : (k,) non-zero penalised coefficients; converged : (k,) bool
    lambda_max : float; timings : stage -> seconds; spec : the path as asked
    """

    lambdas: np.ndarray
    coef: pd.DataFrame
    loglik: np.ndarray
    dev_ratio: np.ndarray
    df: np.ndarray
    converged: np.ndarray
    lambda_max: float
    timings: dict
    spec: dict = field(default_factory=dict)

    @property
    def summary(self) -> pd.DataFrame:
        """lambda, df, loglik, dev_ratio, converged: one row per fit, as glmnet prints."""
        return pd.DataFrame({"lambda": self.lambdas, "df": self.df, "loglik": self.loglik,
                             "dev_ratio": self.dev_ratio, "converged": self.converged})


def path(cohort, model: str = "cox", penalty: str = "l1", grid=None, unpenalized=(),
         progress=None, cancel=None, **options) -> PathResult:
    """Fits along the regularisation path (see the module docstring).

    Parameters
    ----------
    cohort : engine.Cohort; model : one of engine.MODELS; penalty : "l1" | "l2"
    grid : None (10 points) | number of points | sequence of strengths > 0 (sorted decreasing)
    unpenalized : covariate names left out of the penalty
    progress : callable(done, total) after each fit; cancel : threading.Event-like, checked
        between fits and after every solver iteration (engine.Cancelled)
    **options : the fields of engine.FitOptions, as engine.fit (ties, cause, cut_points,
        backend, tol, max_iter, ...)
    """
    t0 = time.perf_counter()
    o = fit_options("path", model, options)
    kind = str(penalty).lower()
    if kind not in PENALTIES:
        raise ValueError(f"penalty must be 'l1' or 'l2', got {penalty!r}")
    check_grid(grid)
    problem = Problem.from_cohort(cohort, o, unpenalized)
    penalized = problem.penalty_vectors(L1(1.0))[0] > 0
    top = lambda_max_of(problem, penalized)
    ll_0 = problem.loglik()
    lambdas = lambda_grid(grid, top)
    t1 = time.perf_counter()

    coefs, lls, converged = [], [], []
    beta = None
    for i, lam in enumerate(lambdas):
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"path cancelled after {i} of {len(lambdas)} fits")
        res = fit_problem(problem, PENALTIES[kind](float(lam)), init=beta, cancel=cancel,
                          cancelled=f"path cancelled at lambda {i + 1} of {len(lambdas)}",
                          precise=False)
        beta = res.beta
        coefs.append(res.coef.to_numpy())
        lls.append(res.loglik)
        converged.append(res.converged)
        if progress is not None:
            progress(i + 1, len(lambdas))
    t2 = time.perf_counter()

    coef = pd.DataFrame(np.vstack(coefs), columns=pd.Index(problem.names, name="covariate"),
                        index=pd.Index(lambdas, name="lambda"))
    lls = np.asarray(lls)
    ll_sat = saturated_loglik(problem)
    return PathResult(
        lambdas=lambdas, coef=coef, loglik=lls, dev_ratio=(lls - ll_0) / (ll_sat - ll_0),
        df=np.count_nonzero(coef.to_numpy()[:, penalized], axis=1),
        converged=np.asarray(converged), lambda_max=top,
        timings={"lambda_max": t1 - t0, "fits": t2 - t1, "total": time.perf_counter() - t0},
        spec={"model": model, "penalty": kind, "ties": o.ties, "unpenalized": problem.unpenalized,
              "points": len(lambdas), "deviance": "glmnet: l_sat - l over l_sat - l_0",
              **fine_gray_spec(o)})


def lambda_max(cohort, model: str = "cox", penalty: str = "l1", unpenalized=(),
               **options) -> float:
    """The scale of the penalty for this design: the smallest L1 strength at which every
    penalised coefficient is zero (just below it one enters), as the path and cross-validation
    use it.  For ``penalty="l2"`` it is the same number, the top of the L2 path's grid (a ridge
    penalty never makes coefficients exactly zero), so a strength given as a fraction of
    lambda_max means the same point of the grid for both.

    Parameters
    ----------
    cohort : engine.Cohort; model, **options : as engine.fit (ties, cause, cut_points, ...)
    penalty : "l1" | "l2"; unpenalized : covariate names left out of the penalty
    """
    o = fit_options("lambda_max", model, options)
    kind = str(penalty).lower()
    if kind not in PENALTIES:
        raise ValueError(f"penalty must be 'l1' or 'l2', got {penalty!r}")
    problem = Problem.from_cohort(cohort, o, unpenalized)
    penalized = problem.penalty_vectors(L1(1.0))[0] > 0
    if not penalized.any():
        raise ValueError("every covariate is in unpenalized: there is no penalty to scale.")
    try:
        return lambda_max_of(problem, penalized)
    finally:
        problem.release()


def lambda_max_of(problem: Problem, penalized: np.ndarray) -> float:
    """max |dl/dbeta_j| over the penalised j, at the fit of the unpenalised coefficients
    alone; leaves the problem at that fit."""
    zero = np.zeros(problem.p)
    problem.solve(zero, zero, None, penalized)
    g = problem.gradient()
    top = float(np.max(np.abs(g[penalized]))) if penalized.any() else 0.0
    if not top > 0:
        raise ValueError("the penalised covariates have zero gradient at the null fit (no "
                         "events, or constant columns): there is no penalty path.")
    return top


def fine_gray_spec(o) -> dict:
    """What a Fine-Gray driver records beside the model: the cause and the censoring."""
    if o.model != "fine_gray":
        return {}
    return {"cause": o.cause, "censoring_strata": o.censoring_strata}


def check_grid(grid) -> None:
    if isinstance(grid, int | np.integer):
        if grid < 2:
            raise ValueError(f"grid as a number of points must be at least 2, got {grid}")
    elif grid is not None:
        g = np.asarray(grid, dtype=np.float64)
        if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g) & (g > 0)):
            raise ValueError(f"grid must hold positive, finite penalty strengths, got {grid!r}")


def lambda_grid(grid, top: float) -> np.ndarray:
    """The strengths in decreasing order (the order of the warm-started path)."""
    if grid is None or isinstance(grid, int | np.integer):
        points = GRID_POINTS if grid is None else int(grid)
        return top * np.logspace(0.0, np.log10(GRID_SPAN), points)
    return np.sort(np.asarray(grid, dtype=np.float64))[::-1]


def saturated_loglik(problem: Problem) -> float:
    """l_sat: 0 for logistic; minus the weighted events for Poisson; -sum_k d_k log d_k over
    the event times of each stratum for the partial (pseudo) likelihoods, d_k the weighted
    events at time k."""
    if problem.options.model == "logistic":
        return 0.0
    if problem.options.model == "poisson":      # mu = y: sum w (y log y - y), y in {0, 1}
        c = problem.cohort
        w = np.ones(c.n) if c.weights is None else np.asarray(c.weights, np.float64)
        return float(-w @ problem.model.events)
    c = problem.cohort
    event = np.asarray(c.event) == (problem.options.cause if problem.options.model ==
                                    "fine_gray" else 1)
    w = np.ones(c.n) if c.weights is None else np.asarray(c.weights, np.float64)
    strata = np.zeros(c.n, np.int64) if c.strata is None else np.asarray(c.strata)
    d = (pd.DataFrame({"s": strata[event], "t": np.asarray(c.time)[event], "w": w[event]})
         .groupby(["s", "t"])["w"].sum().to_numpy())
    d = d[d > 0]
    return float(-np.sum(d * np.log(d)))
