"""What a 4-df natural-spline term of one covariate adds to a large sparse L1 Cox fit.

    NUMPY_MADVISE_HUGEPAGE=0 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python -m bench.spline_term [n] [p] [density] [repeats]

Simulates n x p sparse binary covariates (engine.simulate) and one continuous exposure
(normal, unrelated to the outcome: the fit pays for its columns all the same), then fits,
``repeats`` times in an order rotated by one kind a repeat: the plain cohort; the same cohort
with the exposure as one linear column, unpenalised ("linear_unpenalised"); and with the
exposure's ``ns(bmi, df=4)`` columns (built by the formula front door on a one-column frame)
instead, penalised like the others ("spline_penalised") and unpenalised ("spline_unpenalised",
the usual choice for an exposure of interest); all with L1(0.1 lambda_max of the plain cohort).
Prints the CPU model, the formula build time and each fit's wall and CPU seconds and stage
timings as JSON, and the added cost as ratios of median CPU seconds: each fit against the plain
one, and the unpenalised spline against the unpenalised linear exposure (what choosing a spline
for the exposure costs); and the unpenalised spline's extra CPU over the plain fit paired
within each repeat (``paired_extra_cpu_s``, its median over the plain fit's median as
``paired_extra_fraction``: the figure of docs/benchmarks.md, taken over rotated runs).
CPU seconds, because the shared machine's load moves wall time; on one thread, because idle
Numba workers spin and bill CPU seconds of their own; without NumPy's huge-page requests,
which stall now and then on memory compaction (bench.dense_covariates).
"""
import json
import platform
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

import engine
from engine.data.formula import ModelFormula


def cpu_s():
    """User + system seconds of this process (all threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name")), platform.processor())


def timed_fit(cohort, penalty, unpenalized=()):
    c0, t0 = cpu_s(), time.perf_counter()
    res = engine.fit(cohort, penalty=penalty, unpenalized=unpenalized)
    return {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "iterations": res.n_iter,
            "converged": res.converged, "timings": res.timings}


def cohorts(plain, bmi):
    """The plain cohort, and with the exposure ``bmi`` as one linear column and as its
    ``ns(bmi, df=4)`` columns (built by the formula front door), the spline's names and the
    seconds the formula took to build them."""
    t0 = time.perf_counter()
    S, names = ModelFormula("ns(bmi, df=4)").build(pd.DataFrame({"bmi": bmi}))
    build_s = time.perf_counter() - t0
    spline = engine.Cohort.from_arrays(plain.time, plain.event,
                                       sp.hstack([plain.X, S], format="csc"),
                                       names=plain.names + names)
    linear = engine.Cohort.from_arrays(plain.time, plain.event,
                                       sp.hstack([plain.X, sp.csc_matrix(bmi[:, None])],
                                                 format="csc"), names=plain.names + ["bmi"])
    return (plain, linear, spline, names), build_s


def kind_fits(cohorts_, penalty):
    """The four timed fits by kind, over ``cohorts()``'s cohorts."""
    plain, linear, spline, names = cohorts_
    return {"plain": lambda: timed_fit(plain, penalty),
            "linear_unpenalised": lambda: timed_fit(linear, penalty, unpenalized=["bmi"]),
            "spline_penalised": lambda: timed_fit(spline, penalty),
            "spline_unpenalised": lambda: timed_fit(spline, penalty, unpenalized=names)}


def main(n=1_000_000, p=1000, density=0.01, repeats=2):
    out = {"cpu": cpu_name(), "n": n, "p": p, "density": density}
    rng = np.random.default_rng(1)
    # every kind of fit once on a small cohort first: the first fit of a kind in a process
    # compiles or loads its Numba kernels (0.6-0.8 s on an AMD EPYC, session 34), a cost of
    # the process and not of the fit
    warm, _ = cohorts(engine.simulate(2000, 5, density=0.2, seed=0),
                      rng.normal(27.0, 4.0, 2000))
    for fit in kind_fits(warm, engine.L1(1.0)).values():
        fit()
    plain = engine.simulate(n, p, density=density, seed=0)
    bmi = rng.normal(27.0, 4.0, n)
    kept, out["formula_build_s"] = cohorts(plain, bmi)
    penalty = engine.L1(0.1 * engine.lambda_max(plain))
    fits = kind_fits(kept, penalty)
    runs = {kind: [] for kind in fits}
    kinds = list(fits)
    for r in range(repeats):
        # each repeat starts one kind later, so that no kind always runs first or after the
        # same neighbour (a fixed order measured the memory state the one before left)
        for kind in kinds[r % 4:] + kinds[:r % 4]:
            runs[kind].append(fits[kind]())
        print(json.dumps(runs), flush=True)
    out.update(runs)
    med = {k: float(np.median([r["cpu_s"] for r in v])) for k, v in runs.items()}
    out["added_cpu_fraction"] = {k: med[k] / med["plain"] - 1.0 for k in med if k != "plain"}
    out["spline_over_linear_unpenalised"] = (med["spline_unpenalised"]
                                             / med["linear_unpenalised"] - 1.0)
    # the spline fit less the plain one within each repeat: the two fits a second apart share
    # the machine's speed of the moment, which the medians of each apart do not
    extra = [s["cpu_s"] - p["cpu_s"] for p, s in zip(runs["plain"], runs["spline_unpenalised"])]
    out["paired_extra_cpu_s"] = extra
    out["paired_extra_fraction"] = float(np.median(extra)) / med["plain"]
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    kinds = (int, int, float, int)
    main(*(kind(a) for kind, a in zip(kinds, args)))
