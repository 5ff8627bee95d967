"""One L1 Cox fit at scale, end to end, with its memory: the issue-20 targets at N = 10^7.

    OPENBLAS_NUM_THREADS=1 nice /usr/bin/time -v python bench/big_fit.py 10000000

Simulates N x 1,000 at 5% (engine.simulate), takes lambda_max from a Problem it then drops,
and times engine.fit(cohort, penalty=engine.L1(0.1 lambda_max)) (sort included), printing
the simulation's and the fit's peak RSS, wall and CPU seconds and the load average as JSON.
Meant to be run once by hand (about 11 GB at 10^7); docs/cost_model.md reads its output.
"""
import gc
import json
import os
import resource
import sys
import time

import numpy as np

import engine
from engine.regression.drivers.path import lambda_max_of


def peak_gb():
    """This process's peak resident memory so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def resident_gb():
    """This process's resident memory now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2 ** 30


def cpu_s():
    """User + system seconds of this process (all threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(n, p=1000, density=0.05):
    out = {"n": n, "p": p, "density": density}
    engine.fit(engine.simulate(200, 5, density=0.2, seed=0), penalty=engine.L1(1.0))   # JIT
    t0 = time.perf_counter()
    cohort = engine.simulate(n, p, density=density, seed=0)
    out.update(simulate_s=time.perf_counter() - t0, simulate_peak_gb=peak_gb(),
               cohort_gb=resident_gb(), nnz=int(cohort.X.nnz))
    print(out, flush=True)
    problem = engine.Problem.from_cohort(cohort, engine.FitOptions())
    top = lambda_max_of(problem, problem.penalty_vectors(engine.L1(1.0))[0] > 0)
    del problem
    gc.collect()
    out.update(lambda_max=top, after_lambda_max_gb=resident_gb(), peak_before_fit_gb=peak_gb())
    print(out, flush=True)
    c0, t0, load0 = cpu_s(), time.perf_counter(), os.getloadavg()[0]
    res = engine.fit(cohort, penalty=engine.L1(0.1 * top))
    out.update(fit_end_to_end_s=time.perf_counter() - t0, fit_cpu_s=cpu_s() - c0,
               iterations=res.n_iter, nonzero=int(np.count_nonzero(res.beta)),
               peak_gb=peak_gb(), load=[load0, os.getloadavg()[0]],
               objective=float(-res.loglik + 0.1 * top * np.abs(res.beta).sum()))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
