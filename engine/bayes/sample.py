"""engine.sample: posterior draws of a binary-outcome model by Gibbs sampling.

The cohort's 0/1 ``event`` is the outcome and its covariates the predictors (dense in memory).
Predictors are standardised by default (centred when there is an intercept, scaled to unit
standard deviation) so that one horseshoe fits covariates measured in any unit; the sampler
runs on that scale and the draws are mapped back (beta_j = b_j / s_j, intercept
a - sum_j b_j m_j / s_j), the centre and scale kept in ``spec``.
"""
import os
import time
import warnings

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..core import parallel as par
from ..core.arguments import check_binary_cohort
from ..core.device import device_count
from ..core.errors import CohortError, MonotoneLikelihoodWarning
from .chain import ChainTask, run_chain
from .horseshoe_probit import HorseshoeProbit
from .result import PosteriorResult
from .separation import separating_columns

MODELS = ("horseshoe_probit", "probit")
BACKENDS = ("cpu", "gpu", "auto")
INTERCEPT = "(intercept)"
INTERCEPT_SD = 10.0            # N(0, 10^2) prior of the intercept, on the standardised scale
DENSE_LIMIT = 2 * 1024**3      # bytes of a dense float64 design this sampler will hold
PARALLEL_WORK = 2e9            # N * p * iterations above which chains run in processes
OVERLAP_P = 200                # p from which a serial chain always takes a second thread


def sample(cohort, model="horseshoe_probit", draws=5000, burn_in=1000, chains=4, thin=1,
           seed=0, backend="cpu", progress=None, cancel=None, standardize=True,
           intercept=True, parallel="auto", precision="float64"):
    """Posterior draws of a probit regression of ``cohort.event`` on the covariates.

    Parameters
    ----------
    cohort : engine.Cohort with a 0/1 event (``Cohort.from_frame(df, time=None, event="y")``).
    model : "horseshoe_probit" (Terenin, Dong & Draper 2019) | "probit" (flat prior, the
        Albert-Chib sampler: its posterior mode is the probit MLE).
    draws : draws kept per chain (after thinning); burn_in : iterations dropped first.
    chains : independent chains (Philox streams keyed by seed and chain index).
    thin : keep every thin-th iteration.
    seed : integer in [0, 2**64).
    backend : "cpu" | "gpu" (CuPy and a CUDA device; chains one after another on it; p <= N)
        | "auto" (the GPU when there is one and p <= N, else the CPU).
    progress : callable(done, total) in iterations over all chains (serial runs), or in chains
        (parallel runs).
    cancel : threading.Event-like; ``engine.Cancelled`` is raised when it is set.
    standardize : sample on standardised predictors (recommended for the horseshoe).
    intercept : add an "(intercept)" with a N(0, 10^2) prior (not shrunk).
    parallel : "auto" (processes when the chains are long enough to pay for starting them),
        None/"serial", "threads", "processes", "dask" or a Dask address/client
        (engine.parallel).
    precision : "float64" | "float32" (X, X'X and the Cholesky draw in single precision, as
        the paper's GPU code; about twice as fast at p = 1,000; p <= N only).

    Returns
    -------
    PosteriorResult
    """
    _check_options(model, draws, burn_in, chains, thin, seed, backend)
    if parallel != "auto":
        par.check(parallel)
    check_binary_cohort(cohort, f"engine.sample(model={model!r})")
    if cohort.weights is not None:
        raise ValueError("the Gibbs sampler has no case weights; build the cohort without "
                         "weights= (or replicate rows).")
    t0 = time.perf_counter()
    X, names, center, scale = _design(cohort, standardize, intercept)
    y = np.asarray(cohort.event, dtype=np.float64)
    shrunk = np.array([name != INTERCEPT for name in names])
    prior = "flat" if model == "probit" else "horseshoe"
    column_variance = X[:, shrunk].var(axis=0)
    iterations = burn_in + draws * thin
    if backend == "auto":
        backend = "gpu" if device_count() > 0 and X.shape[1] <= X.shape[0] else "cpu"
    if backend == "gpu":
        return _sample_gpu(X, y, shrunk, prior, precision, names, center, scale, cohort,
                           column_variance, t0,
                           dict(draws=draws, burn_in=burn_in, chains=chains, thin=thin,
                                seed=seed, model=model, standardize=standardize,
                                intercept=intercept), progress, cancel)
    mode = _parallel_mode(parallel, chains, X.size * iterations)
    threads = _threads(mode, X.shape[1])
    gibbs = HorseshoeProbit(X, y, shrunk, INTERCEPT_SD, prior, precision=precision,
                            threads=threads)
    separation = _separation(X, y, names, prior, cohort)
    t_prepare = time.perf_counter() - t0

    t1 = time.perf_counter()
    if mode is None:
        # two threads of one BLAS thread each rather than BLAS pools fighting for the cores
        with threadpool_limits(1 if threads > 1 else None):
            runs = [run_chain(gibbs, c, seed, draws, burn_in, thin, column_variance, progress,
                              cancel, done_before=c * iterations, total=chains * iterations)
                    for c in range(chains)]
    else:
        workers = min(chains, os.cpu_count() or 1)
        task = ChainTask(X, y, shrunk, INTERCEPT_SD, prior, precision, seed, draws, burn_in,
                         thin, column_variance,
                         blas_threads=max(1, (os.cpu_count() or 1) // workers))
        runs = par.run(task, range(chains), parallel=mode, n_jobs=workers,
                       progress=progress, cancel=cancel)
    t_sampling = time.perf_counter() - t1

    spec = {"model": model, "draws": draws, "burn_in": burn_in, "chains": chains, "thin": thin,
            "seed": seed, "backend": "cpu", "precision": precision, "standardize": standardize,
            "intercept": intercept, "parallel": mode or "serial", "threads": threads,
            "beta_route": "bcm" if gibbs.wide else "cholesky", **separation}
    return _result(runs, names, center, scale, shrunk, prior, cohort, y, spec,
                   {"prepare": t_prepare, "sampling": t_sampling})


def _sample_gpu(X, y, shrunk, prior, precision, names, center, scale, cohort,
                column_variance, t0, options, progress, cancel):
    """The chains one after another on the CUDA device (gpu.py)."""
    from .gpu import HorseshoeProbitGpu

    gibbs = HorseshoeProbitGpu(X, y, shrunk, INTERCEPT_SD, prior, precision=precision)
    separation = _separation(X, y, names, prior, cohort)
    t_prepare = time.perf_counter() - t0
    chains, seed = options["chains"], options["seed"]
    iterations = options["burn_in"] + options["draws"] * options["thin"]
    t1 = time.perf_counter()
    runs = [gibbs.run_chain(c, seed, options["draws"], options["burn_in"], options["thin"],
                            column_variance, progress, cancel, done_before=c * iterations,
                            total=chains * iterations) for c in range(chains)]
    spec = {**options, "backend": "gpu", "precision": precision, "parallel": "serial",
            "threads": 1, "beta_route": "cholesky", **separation}
    return _result(runs, names, center, scale, shrunk, prior, cohort, y, spec,
                   {"prepare": t_prepare, "sampling": time.perf_counter() - t1})


def _result(runs, names, center, scale, shrunk, prior, cohort, y, spec, timings):
    """PosteriorResult of the chains' runs, on the covariates' scale."""
    beta = _original_scale(np.stack([run["beta"] for run in runs]), names, center, scale)
    shrinkage = np.full(len(names), np.nan)
    if prior == "horseshoe":
        shrinkage[shrunk] = np.mean([run["shrinkage"] for run in runs], axis=0)
    spec = {**spec, "intercept_sd": INTERCEPT_SD if spec["intercept"] else None,
            "center": center, "scale": scale, "n": cohort.n, "n_events": int(y.sum()),
            "covariates": list(cohort.names)}
    timings = {**timings, "chains": [run["seconds"] for run in runs]}
    return PosteriorResult(draws=beta, names=names,
                           tau=np.stack([run["tau"] for run in runs]),
                           shrinkage=pd.Series(shrinkage, index=names), timings=timings,
                           spec=spec)


def _separation(X, y, names, prior, cohort):
    """Refuse separated data under the flat prior (its posterior is improper: the draws drift
    without bound, as the probit MLE does not exist); under the horseshoe, which keeps the
    posterior proper, warn and name the predictors. Returns the spec's record of the check."""
    columns, check = separating_columns(X, y)
    separated = [names[j] for j in columns if names[j] != INTERCEPT]
    if columns and not separated:
        separated = [INTERCEPT]
    outcome = cohort.source.get("event", "event")
    listing = ", ".join(repr(n) for n in separated[:10])
    if separated and prior == "flat":
        raise CohortError(f"the predictors separate {outcome!r} ({listing}): with a flat prior "
                          "(model='probit') the posterior is improper and the draws drift "
                          "without bound (the probit MLE does not exist either). Drop or merge "
                          "these predictors, or sample model='horseshoe_probit'.")
    if separated:
        warnings.warn(f"the predictors separate {outcome!r} ({listing}): the horseshoe keeps "
                      "the posterior proper, but these coefficients are set by the prior's "
                      "tails, not by the data; read them with care.", MonotoneLikelihoodWarning,
                      stacklevel=3)
    return {"separated": separated, "separation_check": check}


def _check_options(model, draws, burn_in, chains, thin, seed, backend):
    if model not in MODELS:
        raise ValueError(f"model={model!r} is not available; engine.sample draws {MODELS}.")
    for name, value, least in (("draws", draws, 1), ("burn_in", burn_in, 0),
                               ("chains", chains, 1), ("thin", thin, 1)):
        if isinstance(value, bool) or not (isinstance(value, (int, np.integer))
                                           and value >= least):
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if isinstance(seed, bool) or not (isinstance(seed, (int, np.integer)) and 0 <= seed < 2**64):
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not available for engine.sample; use one of "
                         f"{BACKENDS}.")


def _design(cohort, standardize, intercept):
    """Dense design (N, p [+1]), names, and the centre/scale used (zeros/ones if none)."""
    n, p = cohort.X.shape
    if 8 * n * (p + 1) > DENSE_LIMIT:
        raise ValueError(f"the sampler holds X densely: {n:,} x {p:,} needs "
                         f"{8 * n * (p + 1) / 1024**3:.1f} GiB, more than "
                         f"{DENSE_LIMIT / 1024**3:.0f} GiB. Select fewer covariates or rows.")
    X = cohort.X.toarray()
    center = X.mean(axis=0) if (standardize and intercept) else np.zeros(p)
    scale = X.std(axis=0) if standardize else np.ones(p)
    X = (X - center) / scale
    names = list(cohort.names)
    if intercept:
        X = np.hstack([np.ones((n, 1)), X])
        names = [INTERCEPT, *names]
    return X, names, center, scale


def _original_scale(beta, names, center, scale):
    """Map draws (chain, draw, coefficient) from the standardised to the covariates' scale."""
    out = beta.copy()
    slopes = slice(1, None) if names and names[0] == INTERCEPT else slice(None)
    out[..., slopes] = beta[..., slopes] / scale
    if slopes.start == 1:
        out[..., 0] = beta[..., 0] - out[..., 1:] @ center
    return out


def _threads(mode, p):
    """2 when a serial run's second thread should take the Cholesky and a share of the z step
    (horseshoe_probit.split_rows; the chain is the same with 1 or 2): from p = OVERLAP_P, where
    the Cholesky alone pays for the hand-over, and below it only while the load average leaves
    a core idle (at p = 100 an iteration is ~0.7 ms and, measured on this loaded 2-core
    machine, a second thread that must wait for a core made it slower: 2.1 vs 1.5 ms)."""
    cores = os.cpu_count() or 1
    if mode is not None or cores < 2:
        return 1
    return 2 if p >= OVERLAP_P or par.core_idle() else 1


def _parallel_mode(parallel, chains, work_per_chain):
    """None (serial) or an engine.parallel mode; "auto" takes processes when it pays."""
    if parallel == "auto":
        pays = chains > 1 and (os.cpu_count() or 1) > 1 and work_per_chain > PARALLEL_WORK
        return "processes" if pays else None
    return None if parallel in (None, "serial") else parallel
