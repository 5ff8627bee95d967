"""Baseline hazard and covariate-adjusted curves after a fit, at scale (issue 32's target:
10^6 subjects x 1,000 sparse columns, a 2-level treatment, 100 time points, under 2 s after
the fit), on the CPU or the GPU backend (issue 34: the baseline's scans on the device).

    OPENBLAS_NUM_THREADS=1 python -m bench.prediction 1000000 --density 0.01 [--backend gpu]
    python -m bench.prediction 1000000 --p 10 --density 0.3 --se      # with standard errors

Simulates N x 1,000 binary columns (engine.simulate), fits an L1 Cox model with the treatment
(x0) unpenalised (``--se``: an unpenalised fit, whose curves get delta-method standard
errors: the registry-sized cohort with a handful of covariates), then times, best of
``repeats``: the Breslow baseline hazard from the fit's
sorted rows (res.baseline, its cache dropped each round), the risk-weighted sums Q of the
Tsiatis variance at the 100 times (what predictions with standard errors add: Baseline.q_sums)
and engine.adjusted_curves for x0 = 0 / 1 at the 100 times (point estimates unless ``--se``:
a penalised fit has no covariance).  With ``--backend gpu`` the same baseline and Q are also
computed on the host from the same fit (the CPU's code, timed) and their largest relative
difference reported.
Prints JSON with the CPU and the GPU.
"""
import argparse
import json
import os
import time

import numpy as np

import engine
from bench.report import machine_info
from engine.regression.baseline import baseline


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--se", action="store_true",
                    help="fit without a penalty and time the curves with standard errors")
    a = ap.parse_args(argv)
    small = engine.fit(engine.simulate(500, 5, density=0.3, seed=1), backend=a.backend)
    engine.adjusted_curves(small, "x0", np.linspace(0.01, 0.1, 5), se=True)   # JIT warm-up
    small.baseline.q_sums(0, [0.05])
    cohort = engine.simulate(a.n, a.p, density=a.density, seed=0)
    t0 = time.perf_counter()
    penalty = {} if a.se else {"penalty": engine.L1(0.05 * engine.lambda_max(cohort)),
                               "unpenalized": ["x0"]}
    res = engine.fit(cohort, backend=a.backend, **penalty)
    fit_s = time.perf_counter() - t0
    times = np.quantile(np.asarray(cohort.time)[np.asarray(cohort.event) > 0],
                        np.linspace(0.01, 0.95, 100))
    best = {"baseline_s": np.inf, "q_sums_s": np.inf, "adjusted_curves_s": np.inf,
            "total_s": np.inf}
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        res.__dict__.pop("baseline", None)         # FitResult.baseline is computed once
        b = res.baseline
        t1 = time.perf_counter()
        Q = b.q_sums(0, times)
        t2 = time.perf_counter()
        out = engine.adjusted_curves(res, "x0", times, se=a.se)
        t3 = time.perf_counter()
        for key, value in (("baseline_s", t1 - t0), ("q_sums_s", t2 - t1),
                           ("adjusted_curves_s", t3 - t2), ("total_s", t3 - t0)):
            best[key] = min(best[key], value)
    host = {}
    if a.backend == "gpu":
        t0 = time.perf_counter()
        h = baseline(cohort, res.problem.model.data, res.coef.to_numpy(float), "breslow")
        t1 = time.perf_counter()
        Qh = h.q_sums(0, times)
        host = {"host_baseline_s": t1 - t0, "host_q_sums_s": time.perf_counter() - t1,
                "max_rel_diff_hazard": float(np.max(np.abs(b.hazard[0] / h.hazard[0] - 1))),
                "max_rel_diff_q": float(np.max(np.abs(Q - Qh)) / np.max(np.abs(Qh)))}
    machine = machine_info()
    print(json.dumps({"n": a.n, "p": a.p, "density": a.density, "backend": a.backend,
                      "se": a.se, "se_at_last": float(out.contrasts["se"].iloc[-1]),
                      "nnz": int(cohort.X.nnz), "events": cohort.n_events, "fit_s": fit_s,
                      **best, **host,
                      "difference_at_last": float(out.contrasts["difference"].iloc[-1]),
                      "load": os.getloadavg()[0], "cpu": machine["cpu"], "gpu": machine["gpu"]}))


if __name__ == "__main__":
    main()
