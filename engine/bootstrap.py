"""The non-parametric bootstrap of a (penalised) Cox fit (seed 002, Fig. 3; seed 000 Table 1).

Each replicate draws the subjects with replacement (``cohort.id``, else rows) and refits with
the drawn counts as case weights, warm-started from the fit on all data; nothing is copied and
the sorted layout is shared by every replicate.  Reported: percentile intervals at ``level``
(seed 000's bootstrapped percentile intervals) and, per coefficient, the fraction of replicates
in which it is non-zero (seed 002's p_j, "a poor man's posterior probability that beta_j != 0").
Subjects are resampled over the whole cohort, not within strata.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import parallel as par
from .errors import ConvergenceWarning
from .fit import _fit_prepared, fit
from .priors import L1, L2
from .resampling import WeightedRefits, bootstrap_counts, subjects


@dataclass
class BootstrapResult:
    """What ``engine.bootstrap`` returns.

    summary : DataFrame by covariate: coef (fit on all data), lower, upper (percentile
        interval at ``level``), nonzero_fraction
    replicates : DataFrame, one row per replicate, one column per covariate
    fit : FitResult on all data; level : float; timings : dict, stage -> seconds;
    not_converged : replicate fits that hit max_iter (kept)
    """

    summary: pd.DataFrame
    replicates: pd.DataFrame
    fit: object
    level: float
    timings: dict
    not_converged: int = 0
    spec: dict = field(default_factory=dict)


class _ReplicateFits(WeightedRefits):
    """Task: for replicate b, the fit with subject counts from (seed, b) as case weights."""

    def __init__(self, cohort, penalty, seed, init, **kw):
        super().__init__(cohort, **kw)
        self.penalty, self.seed, self.init = penalty, seed, init

    def __call__(self, b):
        prep = self.prepared()
        codes, n_subjects = self.cache.get("subjects", lambda: subjects(self.cohort))
        counts = bootstrap_counts(n_subjects, self.seed, b)
        prep.model.set_weights(self.base_weights() * counts[codes])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = _fit_prepared(prep, self.penalty, init=self.init, tol=self.tol,
                                max_iter=self.max_iter)
        return res.coef.to_numpy(), res.converged


def bootstrap(cohort, model: str = "cox", penalty=None, replicates: int = 200, seed: int = 0,
              level: float = 0.95, parallel=None, n_jobs=None, ties: str = "breslow",
              unpenalized=(), backend: str = "cpu", progress=None, cancel=None,
              tol: float = 1e-8, max_iter: int = 1000) -> BootstrapResult:
    """Bootstrap percentile intervals and non-zero fractions of the coefficients.

    Parameters
    ----------
    cohort : engine.Cohort; model : "cox" | "sccs" (an engine.SccsData; cases are resampled)
    penalty : None | engine.L1(lam) | engine.L2(lam) (e.g. ``cross_validate(...).penalty``)
    replicates : number of bootstrap samples; seed : replicate b uses (seed, b) alone
    level : coverage of the percentile intervals
    parallel, n_jobs, progress, cancel : as ``engine.cross_validate``
    """
    t0 = time.perf_counter()
    if model not in ("cox", "sccs"):
        raise ValueError(f"model={model!r}: bootstrap supports model='cox' and 'sccs' so far.")
    if not (isinstance(replicates, int | np.integer) and replicates >= 2):
        raise ValueError(f"replicates must be an integer >= 2, got {replicates!r}")
    if not (isinstance(level, float) and 0.0 < level < 1.0):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    if penalty is not None and not isinstance(penalty, L1 | L2):
        raise ValueError(f"penalty must be None, engine.L1(lam) or engine.L2(lam), got {penalty!r}")
    par.check(parallel, n_jobs)
    full = fit(cohort, model=model, ties=ties, penalty=penalty, unpenalized=unpenalized,
               backend=backend, tol=tol, max_iter=max_iter)
    t1 = time.perf_counter()
    task = _ReplicateFits(cohort, penalty, seed, full._beta, ties=ties, backend=backend,
                          model=model,
                          unpenalized=full.spec["unpenalized"], tol=tol, max_iter=max_iter)
    out = par.run(task, range(replicates), parallel, n_jobs, progress, cancel)
    t2 = time.perf_counter()

    reps = pd.DataFrame(np.vstack([c for c, _ in out]), columns=full.coef.index)
    reps.index.name = "replicate"
    alpha = (1.0 - level) / 2.0
    lower, upper = np.quantile(reps.to_numpy(), [alpha, 1.0 - alpha], axis=0)
    summary = pd.DataFrame({"coef": full.coef, "lower": lower, "upper": upper,
                            "nonzero_fraction": (reps != 0).mean(axis=0)})
    unconverged = sum(not ok for _, ok in out)
    if unconverged:
        warnings.warn(f"{unconverged} replicate fit(s) stopped at max_iter={max_iter} before "
                      f"tol={tol}; they are kept.", ConvergenceWarning, stacklevel=2)
    return BootstrapResult(
        summary=summary, replicates=reps, fit=full, level=level,
        timings={"fit": t1 - t0, "replicates": t2 - t1, "total": t2 - t0},
        not_converged=int(unconverged),
        spec={"penalty": full.spec["penalty"], "replicates": replicates, "seed": seed,
              "ties": ties, "unpenalized": full.spec["unpenalized"]})
