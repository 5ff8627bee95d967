"""The non-parametric bootstrap of a (penalised) Cox fit (Suchard2013, Fig. 3; Yang2024 Table 1).

Each replicate draws the subjects with replacement (the ``cluster`` given, else ``cohort.id``,
else rows: the clusters of the robust variance, so that the two agree in large samples) and
refits with the drawn counts as case weights, warm-started from the fit on all data; nothing
is copied and the sorted layout is shared by every replicate.  Reported: percentile intervals
at ``level`` (Yang2024's bootstrapped percentile intervals) and, per coefficient, the fraction
of replicates in which it is non-zero (Suchard2013's p_j, "a poor man's posterior probability
that beta_j != 0").
Subjects are resampled over the whole cohort, not within strata.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core import parallel as par
from ...core.errors import CohortError, ConvergenceWarning, DataWarning
from ...core.arguments import check_fit_arguments, check_level
from ..fit import fit_problem
from ..options import fit_options
from .path import fine_gray_spec
from ..priors import L1, L2
from ..problem import Problem
from .resampling import WeightedRefits, bootstrap_counts


@dataclass
class BootstrapResult:
    """What ``engine.bootstrap`` returns.

    summary : DataFrame by covariate: coef (fit on all data), lower, upper (percentile
        interval at ``level``), nonzero_fraction
    replicates : DataFrame, one row per replicate, one column per covariate
    fit : FitResult on all data; level : float; timings : dict, stage -> seconds;
    not_converged : replicate fits that hit max_iter (kept)
    no_events : replicates that drew no event; they have no estimate and are left out of
        ``replicates`` and the intervals
    """

    summary: pd.DataFrame
    replicates: pd.DataFrame
    fit: object
    level: float
    timings: dict
    not_converged: int = 0
    spec: dict = field(default_factory=dict)
    no_events: int = 0


class _ReplicateFits(WeightedRefits):
    """Task: for replicate b, the fit with subject counts from (seed, b) as case weights."""

    def __init__(self, cohort, penalty, seed, init, **kw):
        super().__init__(cohort, **kw)
        self.penalty, self.seed, self.init = penalty, seed, init

    def __call__(self, b):
        problem = self.problem()
        codes, n_subjects = problem.clusters[:2]      # the robust variance's clusters
        counts = bootstrap_counts(n_subjects, self.seed, b)
        weights = self.base_weights() * counts[codes]
        event = np.asarray(problem.cohort.event)
        counted = (problem.model.events > 0 if self.options.model == "poisson"   # its cause's
                   else event == self.options.cause if self.options.model == "fine_gray"
                   else event > 0)
        if not (weights[counted] > 0).any():
            return None, True          # no event drawn: nothing to estimate
        problem.set_weights(weights)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit_problem(problem, self.penalty, init=self.init, precise=False)
        return res.coef.to_numpy(), res.converged


def bootstrap(cohort, model: str = "cox", penalty=None, replicates: int = 200, seed: int = 0,
              level: float = 0.95, parallel=None, n_jobs=None, unpenalized=(), progress=None,
              cancel=None, **options) -> BootstrapResult:
    """Bootstrap percentile intervals and non-zero fractions of the coefficients.

    Parameters
    ----------
    cohort : engine.Cohort (engine.SccsData for "sccs": cases are resampled); model : one of
        engine.MODELS (Fine-Gray re-estimates its censoring weights in each replicate)
    penalty : None | engine.L1(lam) | engine.L2(lam) (e.g. ``cross_validate(...).penalty``)
    replicates : number of bootstrap samples; seed : replicate b uses (seed, b) alone
    level : coverage of the percentile intervals
    parallel, n_jobs, progress, cancel : as ``engine.cross_validate``
    **options : the fields of engine.FitOptions, as engine.fit (ties, cause, cut_points,
        censoring_strata, backend, tol, max_iter, ...)
        (``cluster``: one value per cohort row; whole clusters are drawn, default the subject
        ``id``, else rows: the clusters of the fit's robust variance)
    """
    t0 = time.perf_counter()
    o = fit_options("bootstrap", model, options)
    if not (isinstance(replicates, int | np.integer) and replicates >= 2):
        raise ValueError(f"replicates must be an integer >= 2, got {replicates!r}")
    check_level(level)
    if penalty is not None and not isinstance(penalty, L1 | L2):
        raise ValueError(f"penalty must be None, engine.L1(lam) or engine.L2(lam), got {penalty!r}")
    par.check(parallel, n_jobs)
    check_fit_arguments(cohort)
    full = fit_problem(Problem.from_cohort(cohort, o, unpenalized), penalty)
    t1 = time.perf_counter()
    task = _ReplicateFits(cohort, penalty, seed, full.beta, options=o,
                          unpenalized=full.spec["unpenalized"])
    out = par.run(task, range(replicates), parallel, n_jobs, progress, cancel)
    full.problem.model.release_scratch()
    t2 = time.perf_counter()

    drawn = [b for b, (c, _) in enumerate(out) if c is not None]
    no_events = replicates - len(drawn)
    if len(drawn) < 2:
        raise CohortError(f"{no_events} of {replicates} bootstrap replicates drew no event: "
                          "too few events for a bootstrap. Use more data or a larger cohort.")
    if no_events:
        warnings.warn(f"{no_events} of {replicates} bootstrap replicate(s) drew no event and "
                      "were left out of the intervals (BootstrapResult.no_events).",
                      DataWarning, stacklevel=2)
    reps = pd.DataFrame(np.vstack([out[b][0] for b in drawn]), columns=full.coef.index,
                        index=pd.Index(drawn, name="replicate"))
    alpha = (1.0 - level) / 2.0
    lower, upper = percentiles(reps.to_numpy(), [alpha, 1.0 - alpha])
    summary = pd.DataFrame({"coef": full.coef, "lower": lower, "upper": upper,
                            "nonzero_fraction": (reps != 0).mean(axis=0)})
    unconverged = sum(not out[b][1] for b in drawn)
    if unconverged:
        warnings.warn(f"{unconverged} replicate fit(s) stopped at max_iter={o.max_iter} before "
                      f"tol={o.tol}; they are kept.", ConvergenceWarning, stacklevel=2)
    return BootstrapResult(
        summary=summary, replicates=reps, fit=full, level=level,
        timings={"fit": t1 - t0, "replicates": t2 - t1, "total": t2 - t0},
        not_converged=int(unconverged), no_events=int(no_events),
        spec={"penalty": full.spec["penalty"], "replicates": replicates, "seed": seed,
              "ties": o.ties, "unpenalized": full.spec["unpenalized"], **fine_gray_spec(o)})


def percentiles(values: np.ndarray, q) -> np.ndarray:
    """numpy's linear percentiles of each column, where a diverging (infinite) replicate next
    to the percentile gives that infinity rather than NaN and a RuntimeWarning."""
    lo = np.quantile(values, q, axis=0, method="lower")
    hi = np.quantile(values, q, axis=0, method="higher")
    out = np.where(np.isinf(lo), lo, hi)
    cols = np.flatnonzero(np.isfinite(lo).all(axis=0) & np.isfinite(hi).all(axis=0))
    out[:, cols] = np.quantile(values[:, cols], q, axis=0)
    return out
