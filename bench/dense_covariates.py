"""An everyday cohort model at scale: N x p dense covariates (an age in years, a binary sex,
the rest correlated continuous measurements), unpenalised, Breslow ties, fitted by engine.fit
and, up to 2 x 10^5 rows, by lifelines' CoxPHFitter on the same rows.

    NUMPY_MADVISE_HUGEPAGE=0 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python -m bench.dense_covariates [n] [p] [repeats]

Prints the CPU model, each survscan fit's wall and CPU seconds, steps and stage timings, and
lifelines' seconds and largest coefficient difference, as JSON.  NUMPY_MADVISE_HUGEPAGE=0: on
a kernel whose transparent huge pages defragment on demand (defrag=madvise, this machine's and
the default), NumPy's huge-page requests stall now and then on compaction (a 10^6-row fit's
sort took 0.41 s or 0.76-0.97 s by turns); without them every run pays the same page faults.
"""
import json
import resource
import sys
import time

import numpy as np
import pandas as pd

import engine
from bench.spline_term import cpu_name


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cohort_frame(n, p, seed=0):
    """The simulated rows as a DataFrame (time, event, x0..x{p-1}) and the true log-HRs."""
    rng = np.random.default_rng(seed)
    X = 0.5 * rng.normal(size=(n, 1)) + rng.normal(size=(n, p))
    X[:, 0] = rng.normal(60.0, 10.0, n)                    # age in years: far from zero
    X[:, 1] = (rng.random(n) < 0.5).astype(float)            # sex
    beta = rng.normal(0.0, 0.1, p)
    beta[0] = 0.03
    t = rng.exponential(np.exp(-(X - X.mean(axis=0)) @ beta))
    c = rng.exponential(1.0, n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame["time"], frame["event"] = np.minimum(t, c), (t <= c).astype(int)
    return frame, beta


def main(n=1_000_000, p=20, repeats=3):
    out = {"cpu": cpu_name(), "n": n, "p": p}
    frame, _ = cohort_frame(n, p)
    names = [f"x{j}" for j in range(p)]
    cohort = engine.Cohort.from_frame(frame, time="time", event="event", covariates=names)
    engine.fit(engine.Cohort.from_frame(frame.iloc[:500], time="time", event="event",
                                        covariates=names))                       # JIT
    fits = []
    for _ in range(repeats):
        c0, t0 = cpu_s(), time.perf_counter()
        res = engine.fit(cohort)
        fits.append({"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0,
                     "iterations": res.n_iter, "converged": res.converged,
                     "timings": res.timings})
        print(json.dumps(fits[-1]), flush=True)
    out["survscan"] = fits
    out["survscan_median_cpu_s"] = float(np.median([f["cpu_s"] for f in fits]))
    if n <= 200_000:
        from lifelines import CoxPHFitter
        t0 = time.perf_counter()
        cph = CoxPHFitter().fit(frame, duration_col="time", event_col="event")
        out["lifelines_s"] = time.perf_counter() - t0
        out["max_abs_coef_diff"] = float(np.max(np.abs(cph.params_[names].to_numpy()
                                                       - res.coef[names].to_numpy())))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    kinds = (int, int, int)
    main(*(kind(a) for kind, a in zip(kinds, sys.argv[1:])))
