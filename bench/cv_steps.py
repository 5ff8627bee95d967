"""Cross-validation with the plain proximal-Newton steps against the plane-corrected ones
(backends/cox_subspace), A/B in one process on one cohort: wall time, the fold fits' outer
steps, and whether the curve and the chosen lambda agree (issue 20 item 3)."""
import time

import numpy as np

import engine
from bench.report import machine_info, save
from engine.regression.backends.cox_cpu import CoxCpuBackend


def run(n, p, density=0.05, folds=10, grid=10, seed=0, steps=("plane", "plain"),
        out="bench/results"):
    cohort = engine.simulate(n, p, density=density, seed=seed)
    engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))  # JIT
    runs, curves = {}, {}
    for step in steps:
        CoxCpuBackend.plane_step = step == "plane"
        t0 = time.perf_counter()
        try:
            cv = engine.cross_validate(cohort, folds=folds, grid=grid, seed=seed)
        finally:
            CoxCpuBackend.plane_step = True
        wall = time.perf_counter() - t0
        curves[step] = cv.curve["mean"].to_numpy()
        runs[step] = {"wall_s": wall, "timings": cv.timings, "lambda": cv.penalty.lam,
                      "not_converged": cv.not_converged,
                      "nonzero_coef": int(np.count_nonzero(cv.fit.coef))}
        print(f"{step}: {wall:.1f} s, lambda {cv.penalty.lam:.6g}", flush=True)
    ref = curves[steps[-1]]
    for step in steps:
        runs[step]["max_rel_curve_diff"] = float(np.max(np.abs(curves[step] - ref) / np.abs(ref)))
    record = {"experiment": "cv_steps", "n": n, "p": p, "density": density, "folds": folds,
              "grid": grid, "seed": seed, "events": int(cohort.n_events), "runs": runs,
              "machine": machine_info()}
    m = record["machine"]
    lines = [f"# Cross-validation, plain against plane steps: N={n:,}, P={p:,} (density "
             f"{density}, {record['events']:,} events), {folds}-fold x {grid}-point L1 grid, serial",
             "", "| steps | wall (s) | folds (s) | refit (s) | chosen lambda | max rel curve diff |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {s} | {r['wall_s']:.1f} | {r['timings']['folds']:.1f} | "
              f"{r['timings']['refit']:.1f} | {r['lambda']:.6g} | {r['max_rel_curve_diff']:.1e} |"
              for s, r in runs.items()]
    lines += ["", f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
              f"{m['load_average_1_5_15min']}; one process, the runs one after the other."]
    text = "\n".join(lines)
    return save(record, text, out, f"cv_steps_n{n}_p{p}_k{folds}_g{grid}")
