"""A formula's cohort at registry size: Cohort.from_frame with a formula against the same
columns as a covariates list.

    python -m bench.formula_cohort [n] [p] [repeats]

Simulates n rows of p normal covariates, then builds ``repeats`` times, alternating: the cohort
of the formula "x1 + ... + x{p-1} + ns(x0, df=4)" (formulaic with the engine's materializer,
the spline's knots, the medians effect curves hold the other variables at), with a Cox fit
after each as the app runs it (so that each build meets the memory a session has, not a fresh
process's), and the cohort of the p columns as a covariates list.  Prints JSON with the CPU:
the seconds and minor page faults of each build.
"""
import json
import resource
import sys
import time

import numpy as np
import pandas as pd

import engine
from bench.report import machine_info


def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(build):
    f0, t0 = faults(), time.perf_counter()
    cohort = build()
    return cohort, {"seconds": time.perf_counter() - t0, "minor_faults": faults() - f0}


def main(n=1_000_000, p=20, repeats=3):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(p)})
    df["time"], df["event"] = rng.exponential(size=n), rng.integers(0, 2, n)
    formula = " + ".join(f"x{j}" for j in range(1, p)) + " + ns(x0, df=4)"
    columns = [f"x{j}" for j in range(p)]
    out = {"machine": machine_info(), "n": n, "p": p, "formula": [], "covariates": []}
    for _ in range(repeats):
        cohort, row = timed(lambda: engine.Cohort.from_frame(df, "time", "event",
                                                             formula=formula))
        engine.fit(cohort)
        out["formula"].append(row)
        cohort, row = timed(lambda: engine.Cohort.from_frame(df, "time", "event",
                                                             covariates=columns))
        engine.fit(cohort)
        out["covariates"].append(row)
        print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    kinds = (int, int, int)
    main(*(kind(a) for kind, a in zip(kinds, sys.argv[1:])))
