"""Baseline hazard and covariate-adjusted curves after a fit, at scale (issue 32's target:
10^6 subjects x 1,000 sparse columns, a 2-level treatment, 100 time points, under 2 s after
the fit).

    OPENBLAS_NUM_THREADS=1 python -m bench.prediction 1000000 --density 0.01

Simulates N x 1,000 binary columns (engine.simulate), fits an L1 Cox model with the treatment
(x0) unpenalised, then times, best of ``repeats``: the Breslow baseline hazard from the fit's
sorted rows (res.baseline, its cache dropped each round) and engine.adjusted_curves for x0 = 0 / 1 at
100 times (point estimates: a penalised fit has no covariance).  Prints JSON with the CPU.
"""
import argparse
import json
import os
import time

import numpy as np

import engine
from bench.report import machine_info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    small = engine.fit(engine.simulate(500, 5, density=0.3, seed=1))       # JIT warm-up
    engine.adjusted_curves(small, "x0", np.linspace(0.01, 0.1, 5), se=False)
    cohort = engine.simulate(a.n, a.p, density=a.density, seed=0)
    t0 = time.perf_counter()
    res = engine.fit(cohort, penalty=engine.L1(0.05 * engine.lambda_max(cohort)),
                     unpenalized=["x0"])
    fit_s = time.perf_counter() - t0
    times = np.quantile(np.asarray(cohort.time)[np.asarray(cohort.event) > 0],
                        np.linspace(0.01, 0.95, 100))
    best = {"baseline_s": np.inf, "adjusted_curves_s": np.inf, "total_s": np.inf}
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        res.__dict__.pop("baseline", None)         # FitResult.baseline is computed once
        res.baseline
        t1 = time.perf_counter()
        out = engine.adjusted_curves(res, "x0", times, se=False)
        t2 = time.perf_counter()
        for key, value in (("baseline_s", t1 - t0), ("adjusted_curves_s", t2 - t1),
                           ("total_s", t2 - t0)):
            best[key] = min(best[key], value)
    print(json.dumps({"n": a.n, "p": a.p, "density": a.density, "nnz": int(cohort.X.nnz),
                      "events": cohort.n_events, "fit_s": fit_s, **best,
                      "difference_at_last": float(out.contrasts["difference"].iloc[-1]),
                      "load": os.getloadavg()[0], "cpu": machine_info()["cpu"]}))


if __name__ == "__main__":
    main()
