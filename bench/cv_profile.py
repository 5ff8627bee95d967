"""Where a serial cross-validation spends its passes: one k-fold x grid L1 CV with every Numba
kernel counted (cost_model.Counter), broken down per grid point (averaged over the folds):
outer steps, row passes, X passes and Gram builds; plus the run's wall and CPU seconds, so a
loaded machine's waiting can be told from the work (docs/cost_model.md reads these numbers)."""
import time
from collections import defaultdict

import numpy as np

import engine
from bench.cost_model import Counter
from bench.report import machine_info, save
from engine.regression.drivers import cross_validation

# (label, kernels summed) of the table's pass columns
PASSES = [("row passes", ("cox_kernels.risk_set_pass", "cox_cpu.direction_curvature")),
          ("eta = X beta", ("hazard_state.set_linear_predictor",)),
          ("gradient, all columns", ("hazard_state.column_dots",)),
          ("gradient, L1 zeros", ("hazard_state.column_dots_on",)),
          ("inner solves", ("diagonal_step_kernels.quadratic_cd_u",
                            "row_block_parallel.block_dots")),
          ("Gram builds", ("row_block_parallel.gram_matrix",))]


def run(n, p, density=0.05, folds=10, grid=10, seed=0, out="bench/results"):
    cohort = engine.simulate(n, p, density=density, seed=seed)
    engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))  # JIT
    fits = defaultdict(list)         # lambda -> [(outer steps, kernel calls)] over the folds
    original = cross_validation.fit_problem
    with Counter() as counter:
        def counted(problem, penalty, **kw):
            before = dict(counter.calls)
            res = original(problem, penalty, **kw)
            fits[penalty.lam].append((res.n_iter, {k: c - before.get(k, 0)
                                                   for k, c in counter.calls.items()}))
            return res
        cross_validation.fit_problem = counted
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            cv = engine.cross_validate(cohort, folds=folds, grid=grid, seed=seed)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            cross_validation.fit_problem = original
        kernels = counter.take()
    per_lambda = []
    for lam in cv.curve["lambda"]:
        rows = fits[lam][:folds]                       # the folds' fits (the refit comes last)
        calls = {label: float(np.mean([sum(c.get(k, 0) for k in names) for _, c in rows]))
                 for label, names in PASSES}
        per_lambda.append({"lambda": float(lam), "outer_steps": float(np.mean([s for s, _ in rows])),
                           **calls})
    record = {"experiment": "cv_profile", "n": n, "p": p, "density": density, "folds": folds,
              "grid": grid, "seed": seed, "events": int(cohort.n_events), "wall_s": wall,
              "cpu_s": cpu, "timings": cv.timings, "lambda": cv.penalty.lam,
              "curve_mean": cv.curve["mean"].tolist(), "per_lambda": per_lambda,
              "kernels": kernels, "machine": machine_info()}
    text = _markdown(record)
    return save(record, text, out, f"cv_profile_n{n}_p{p}_k{folds}_g{grid}")


def _markdown(r):
    m = r["machine"]
    lines = [f"# Serial cross-validation, pass by pass: N={r['n']:,}, P={r['p']:,} (density "
             f"{r['density']}, {r['events']:,} events), {r['folds']}-fold x {r['grid']}-point L1",
             "", f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, chosen lambda "
             f"{r['lambda']:.6g}; per fold fit, averaged over the folds:", "",
             "| lambda | outer steps | " + " | ".join(label for label, _ in PASSES) + " |",
             "|---:|" + "---:|" * (len(PASSES) + 1)]
    lines += [f"| {row['lambda']:.4g} | {row['outer_steps']:.1f} | "
              + " | ".join(f"{row[label]:.1f}" for label, _ in PASSES) + " |"
              for row in r["per_lambda"]]
    total = sum(k["s"] for k in r["kernels"].values()) or 1.0
    lines += ["", "| kernel | calls | s | share |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {k['calls']} | {k['s']:.2f} | {k['s'] / total:.0%} |"
              for name, k in sorted(r["kernels"].items(), key=lambda kv: -kv[1]["s"])]
    lines += ["", f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
              f"{m['load_average_1_5_15min']}; kernel seconds are wall seconds inside the kernels."]
    return "\n".join(lines)
