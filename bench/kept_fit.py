"""What a kept fit holds: the resident memory a fit adds while it is kept (as the app keeps
every fit of a session), after the fit and after its first standard errors, and how long
those take, for an unpenalised Cox fit of n x p dense covariates.

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m bench.kept_fit [n] [p]

The fit keeps its problem (the sorted columns, for refits, residuals and predictions); what
it kept beyond that until session 28 was the inner solver's scratch (the dense columns'
row-major copy Z, n x p doubles, and the working set's row block).  Resident memory from
/proc/self/statm after a garbage collection, over what was resident once the cohort was
built.  Prints the CPU model and the figures as JSON.
"""
import gc
import json
import sys
import time

import numpy as np

import engine
from bench.spline_term import cpu_name


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def main(n=1_000_000, p=20):
    rng = np.random.default_rng(0)
    cohort = engine.Cohort.from_arrays(rng.exponential(1.0, n),
                                       (rng.random(n) < 0.7).astype(int),
                                       0.1 * rng.normal(size=(n, p)))
    engine.fit(engine.simulate(200, 5, seed=0))       # JIT
    gc.collect()
    base = resident_mb()
    t0 = time.perf_counter()
    res = engine.fit(cohort)
    t1 = time.perf_counter()
    gc.collect()
    after_fit = resident_mb() - base
    t2 = time.perf_counter()
    se = res.se
    t3 = time.perf_counter()
    gc.collect()
    print(json.dumps({"cpu": cpu_name(), "n": n, "p": p, "fit_s": t1 - t0,
                      "kept_after_fit_mb": after_fit, "first_se_s": t3 - t2,
                      "kept_after_se_mb": resident_mb() - base,
                      "se_finite": bool(np.isfinite(se).all()),
                      "cohort_columns_mb": 12 * n * p / 1e6}))


if __name__ == "__main__":
    kinds = (int, int)
    main(*(kind(a) for kind, a in zip(kinds, sys.argv[1:])))
