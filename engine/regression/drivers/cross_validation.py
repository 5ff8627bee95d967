"""Cross-validation of the penalty strength: k folds by subject, repeats, a warm-started grid
or an automatic search, fanned out over ``parallel`` (Yang2022 sec. 2.8 and 3.2; Suchard2013).

The score is the cross-validated partial likelihood of Verweij & van Houwelingen (1993):
fold k contributes ``cvl_k = l(beta_-k) - l_-k(beta_-k)``, the log partial likelihood of all
the data minus that of the training data, both at the training fit beta_-k.  Unlike the
partial likelihood of the held-out rows alone, it is well defined for Cox (a held-out event's
risk set includes training subjects) and it is what Cyclops and R's penalized use.  The curve
reports its mean and sd over the folds x repeats; the chosen lambda maximises the mean.
For logistic regression (rows independent) the same score is the held-out log-likelihood; for
Fine-Gray it is the same difference of log pseudo-likelihoods, each with the censoring weights
of its own rows.

The default grid is ``grid`` (10) points log-spaced from lambda_max down to 1e-3 lambda_max,
where lambda_max = max |dl/dbeta_j| over the penalised j at the fit of the unpenalised ones
alone (all penalised coefficients 0): the smallest L1 strength that keeps them all at zero.
Each fold walks the grid from lambda_max down, every fit starting from the previous one.
``auto=True`` instead brackets the optimum in half-decade steps of log10 lambda and refines it
by Brent's golden-section / parabolic search (as Cyclops' auto search).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from ...core import parallel as par
from ...core.errors import ConvergenceWarning
from ..fit import fit_problem
from ..options import fit_options
from .path import PENALTIES, check_grid, fine_gray_spec, lambda_grid, lambda_max_of
from ..priors import L1
from ..problem import Problem
from .resampling import WeightedRefits, fold_of_rows, subjects

_STEP = 0.5          # decades of lambda per bracketing step
_XATOL = 0.01        # decades: the automatic search's resolution
_MAX_DECADES = 6.0   # the search stays within [1e-6, 1e+2] x lambda_max


@dataclass
class CrossValidationResult:
    """What ``engine.cross_validate`` returns.

    penalty : engine.L1 / L2 at the chosen lambda
    curve : DataFrame, one row per lambda evaluated (descending): lambda, mean, sd of the fold
        scores, then one column ``r{repeat}_f{fold}`` per fold
    fit : FitResult, the refit on all data at ``penalty``
    lambda_max : float; timings : dict, stage -> seconds; not_converged : fold fits that hit
    max_iter (their scores are kept)
    """

    penalty: object
    curve: pd.DataFrame
    fit: object
    lambda_max: float
    timings: dict
    not_converged: int = 0
    spec: dict = field(default_factory=dict)


class _FoldFits(WeightedRefits):
    """Task: for item (repeat, fold, lambdas, init, pilot) fit the training data along
    ``lambdas`` (warm starts) and return the fold's scores, its coefficients at each lambda
    and its count of unconverged fits.  With ``pilot`` (another fold's coefficients along the
    same lambdas) each fit after the first starts where the last one ended moved as the pilot
    moved between the same two lambdas: the folds' paths run nearly parallel, so this start is
    closer to the optimum than the last fit alone (fewer outer steps, the same optimum).

    In a serial run the task also reports each (fold, grid point) step through ``step`` and
    polls ``cancel`` after every solver iteration, so a long fold can be stopped at once; both
    stay behind when the task is pickled for processes or Dask (which poll between folds)."""

    def __init__(self, cohort, kind, folds, seed, step=None, cancel=None, **kw):
        super().__init__(cohort, **kw)
        self.kind, self.folds, self.seed = kind, folds, seed
        self.step, self.cancel = step, cancel

    def __getstate__(self):
        return {**self.__dict__, "step": None, "cancel": None}

    def __call__(self, item):
        repeat, k, lambdas, beta, pilot = item
        problem = self.problem()
        fold = self.cache.get(("fold", repeat),
                              lambda: fold_of_rows(problem.cohort, self.folds, self.seed, repeat))
        full = self.base_weights()
        train = np.where(fold == k, 0.0, full)
        scores, betas, unconverged = [], [], 0
        for i, lam in enumerate(lambdas):
            problem.set_weights(train)
            init = beta if pilot is None or beta is None else beta + (pilot[i] - pilot[i - 1])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fit_problem(problem, PENALTIES[self.kind](float(lam)), init=init,
                                  cancel=self.cancel, precise=False,
                                  cancelled=f"cross-validation cancelled at fold {k + 1}, "
                                            f"lambda {i + 1} of {len(lambdas)}")
            beta = res.beta
            betas.append(beta)
            unconverged += not res.converged
            problem.set_weights(full)
            scores.append(problem.loglik(beta) - res.loglik)
            if self.step is not None:
                self.step()
        return np.array(scores), np.array(betas), unconverged


def cross_validate(cohort, model: str = "cox", penalty: str = "l1", folds: int = 10,
                   repeats: int = 1, grid=None, seed: int = 0, parallel=None, n_jobs=None,
                   unpenalized=(), auto: bool = False, progress=None, cancel=None,
                   **options) -> CrossValidationResult:
    """Choose the L1 or L2 strength by k-fold cross-validation (see the module docstring).

    Parameters
    ----------
    cohort : engine.Cohort (engine.SccsData for "sccs"); model : one of engine.MODELS;
        penalty : "l1" | "l2"
    folds : k >= 2 folds of subjects (``cohort.id``, else rows; SCCS: cases), within strata;
        a subject's episodes (cut points) stay in one fold
    repeats : independent fold assignments (Yang2022 uses 10 x 10)
    grid : None | number of points of the default grid | sequence of lambdas > 0
    seed : fixes the folds; the same seed gives the same result for every ``parallel``
    parallel, n_jobs : where the folds run (engine.parallel): None/"serial", "threads",
        "processes", "dask", a scheduler address or a distributed.Client
    unpenalized : covariate names left out of the penalty (e.g. the treatment)
    auto : search lambda by bracketing and Brent's method instead of walking the grid
    progress : callable(done, total) after each (fold, grid point) step, ``total`` = folds x
        repeats x grid points (processes and Dask report whole folds; in auto mode one step
        is one fold fit and total grows with the search)
    cancel : threading.Event-like; when set, the run stops with engine.Cancelled: between
        folds, and in a serial run after the current solver iteration
    **options : the fields of engine.FitOptions, as engine.fit (ties, cause, cut_points,
        censoring_strata, backend, tol, max_iter, ...), for the fold fits and the refit
    """
    t0 = time.perf_counter()
    o = fit_options("cross_validate", model, options)
    kind = _check(cohort, penalty, folds, repeats, grid, parallel, n_jobs)
    problem = Problem.from_cohort(cohort, o, unpenalized)
    lam1, _ = problem.penalty_vectors(L1(1.0))
    penalized = lam1 > 0
    if not penalized.any():
        raise ValueError("every covariate is in unpenalized: there is no penalty to choose.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = lambda_max_of(problem, penalized)
    t1 = time.perf_counter()

    serial = parallel is None or parallel == "serial"
    task = _FoldFits(cohort, kind, folds, seed, cancel=cancel if serial else None,
                     options=o, unpenalized=problem.unpenalized)
    task.cache.get("problem", lambda: problem)   # serial folds reuse this sorted layout
    pairs = [(r, k) for r in range(repeats) for k in range(folds)]
    with par.Runner(task, parallel, n_jobs) as runner:
        if auto:
            lambdas, scores, unconverged = _search(runner, pairs, top, kind, progress, cancel)
            pilot = None
        else:
            lambdas = lambda_grid(grid, top)
            report = _step_progress(task, progress, serial, len(pairs), len(lambdas))
            # the first fold walks the grid alone; the others start from its moves (pilot)
            out = runner.map([(*pairs[0], tuple(lambdas), None, None)], report, cancel)
            pilot = out[0][1]
            rest = None if report is None else (lambda done, n: report(done + 1, n + 1))
            out += runner.map([(r, k, tuple(lambdas), None, pilot) for r, k in pairs[1:]],
                              rest, cancel)
            scores = np.column_stack([s for s, _, _ in out])
            unconverged = sum(u for _, _, u in out)
    t2 = time.perf_counter()

    curve = _curve(lambdas, scores, pairs)
    best = float(curve["lambda"].iloc[int(np.argmax(curve["mean"].to_numpy()))])
    chosen = PENALTIES[kind](best)
    # the refit starts from the pilot fold's fit at the chosen lambda: near, the same optimum
    start = None if pilot is None else pilot[int(np.argmin(np.abs(np.asarray(lambdas) - best)))]
    problem.set_weights(task.base_weights())  # and forget the last solve's step: every
    #                                          parallel mode then refits from the same state
    refit = fit_problem(problem, chosen,      # the layout sorted for lambda_max, not again
                        init=start, cancel=cancel,
                        cancelled="cross-validation cancelled during the refit")
    problem.model.release_scratch()
    t3 = time.perf_counter()
    if unconverged:
        warnings.warn(f"{unconverged} fold fit(s) stopped at max_iter={o.max_iter} before "
                      f"tol={o.tol}; their scores are kept.", ConvergenceWarning, stacklevel=2)
    return CrossValidationResult(
        penalty=chosen, curve=curve, fit=refit, lambda_max=top,
        timings={"lambda_max": t1 - t0, "folds": t2 - t1, "refit": t3 - t2,
                 "total": t3 - t0},
        not_converged=int(unconverged),
        spec={"model": model, "penalty": kind, "folds": folds, "repeats": repeats, "seed": seed,
              "auto": auto, "ties": o.ties, "unpenalized": problem.unpenalized,
              **fine_gray_spec(o),
              "parallel": parallel if isinstance(parallel, str | None) else "client",
              "score": "Verweij-van Houwelingen cross-validated partial likelihood"})


def _step_progress(task, progress, serial, n_folds, steps):
    """Report ``progress(done, n_folds * steps)`` per (fold, grid point) step: from inside the
    task when serial, else once per finished fold (``steps`` at a time).  Returns the runner's
    per-fold callback."""
    if progress is None:
        return None
    total = n_folds * steps
    if not serial:
        return lambda done, _: progress(done * steps, total)
    done = [0]

    def step():
        done[0] += 1
        progress(done[0], total)
    task.step = step
    return None


def _check(cohort, penalty, folds, repeats, grid, parallel, n_jobs) -> str:
    """Validate the arguments besides the fit options; return the penalty kind."""
    kind = str(penalty).lower()
    if kind not in PENALTIES:
        raise ValueError(f"penalty must be 'l1' or 'l2', got {penalty!r}")
    n_subjects = subjects(cohort)[1]
    if not (isinstance(folds, int | np.integer) and 2 <= folds <= n_subjects):
        raise ValueError(f"folds must be an integer from 2 to the number of subjects "
                         f"({n_subjects}), got {folds!r}")
    if not (isinstance(repeats, int | np.integer) and repeats >= 1):
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    check_grid(grid)
    par.check(parallel, n_jobs)
    return kind


def _search(runner, pairs, lambda_max, kind, progress, cancel):
    """Bracket the best log10 lambda in half-decade steps, then refine it by Brent's method;
    every fold starts from its own fit at the nearest lambda already evaluated."""
    top = np.log10(lambda_max)
    upper = top if kind == "l1" else top + 2.0   # above lambda_max an L1 fit is all zeros
    lower = top - _MAX_DECADES
    mean, scores, starts = {}, {}, {}
    unconverged = [0]

    def evaluate(x):
        x = float(np.clip(x, lower, upper))
        if x in mean:
            return mean[x]
        items = []
        for i, (r, k) in enumerate(pairs):
            near = min(starts, key=lambda e: abs(e - x)) if starts else None
            items.append((r, k, (10.0 ** x,), None if near is None else starts[near][i],
                          None))
        done = len(mean) * len(pairs)
        report = None if progress is None else (
            lambda d, t: progress(done + d, done + t))
        out = runner.map(items, report, cancel)
        scores[x] = np.array([s[0] for s, _, _ in out])
        starts[x] = [b[-1] for _, b, _ in out]
        unconverged[0] += sum(u for _, _, u in out)
        mean[x] = float(scores[x].mean())
        return mean[x]

    a, b = top - 1.5, top - 1.5 - _STEP
    if evaluate(b) < evaluate(a):
        a, b = b, a
    direction = np.sign(b - a)            # towards higher scores
    while True:
        c = float(np.clip(b + direction * _STEP, lower, upper))
        if c == b or evaluate(c) <= evaluate(b):
            break
        a, b = b, c
    if c != b:
        lo, hi = sorted((a, c))
        minimize_scalar(lambda x: -evaluate(x), bounds=(lo, hi), method="bounded",
                        options={"xatol": _XATOL})
    xs = sorted(mean, reverse=True)
    return 10.0 ** np.array(xs), np.vstack([scores[x] for x in xs]), unconverged[0]


def _curve(lambdas, scores, pairs) -> pd.DataFrame:
    """lambda, mean, sd of the fold scores, and the per-fold scores, by decreasing lambda."""
    scores = np.asarray(scores, dtype=np.float64)
    curve = pd.DataFrame({"lambda": np.asarray(lambdas, dtype=np.float64),
                          "mean": scores.mean(axis=1),
                          "sd": scores.std(axis=1, ddof=1) if scores.shape[1] > 1 else np.nan})
    folds = pd.DataFrame(scores, columns=[f"r{r}_f{k}" for r, k in pairs])
    return pd.concat([curve, folds], axis=1).sort_values("lambda", ascending=False,
                                                         ignore_index=True)
