"""A sensitivity grid against the one-by-one loop (issue 33): subgroup masks x adjustment sets
x L1 penalties of one Cox fit, fitted by ``engine.sensitivity_study`` on one sorted layout, and
the same variants by sequential ``engine.fit`` calls.

The grid is timed whole.  The loop is timed on ``loop_sample`` variants spread over the grid
(each an ``engine.fit`` of the variant's own cohort and its summary, as the grid reports a CI
and p for every variant; the cohort's building is timed apart) and
extrapolated to the grid's size, since at 10^6 rows the full loop takes hours on a 2-core box;
the sampled fits also check that the grid's coefficients of interest equal theirs.
"""
import os
import time

import numpy as np

import engine
from bench.report import machine_info, save


def run(n, p, density=0.05, masks=10, sets=4, penalties=5, loop_sample=6, seed=0,
        out="bench/results", backend="cpu", parallel=None, n_jobs=None, tol=1e-9):
    """Time the grid serially and a sample of the loop on ``backend`` (both), and the grid
    again with ``parallel`` ("threads", "processes", "dask"; default threads on the CPU
    backend, none on the GPU one, whose variants run one after another on the device) unless
    serial; write JSON + Markdown; return the record.  The speed-up is the loop's time over
    the faster grid's.  ``tol`` is the solver's, for the grid and the loop alike (at the
    default 1e-9 they agree to about 1e-9 at 10^6 x 1,000)."""
    parallel = parallel or ("threads" if backend == "cpu" else "serial")
    print(f"simulating N={n:,} P={p:,} density={density}", flush=True)
    cohort = engine.simulate(n, p, density=density, seed=seed)
    rng = np.random.default_rng(seed)
    subgroups = {"all": None, **{f"random 80% #{k}": rng.random(n) < 0.8
                                 for k in range(1, masks)}}
    sizes = np.linspace(p // sets, p, sets).astype(int)
    adjustment = {f"first {k}": cohort.names[:k] for k in sizes}
    top = float(np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p))[1:])))
    ratios = np.geomspace(0.3, 0.05, penalties)
    vary = {"subgroup": subgroups, "covariates": adjustment,
            "penalty": {f"L1 {r:.3g} lambda_max": engine.L1(r * top) for r in ratios}}
    base = {"backend": backend, "tol": tol}
    warm = engine.sensitivity_study(engine.simulate(300, 5, 0.3, seed=1), "x0",
                                    vary={"penalty": [engine.L1(1.0)]}, base=base)
    assert (warm.table["error"] == "").all()
    print(f"grid: {masks} x {sets} x {penalties} variants ...", flush=True)
    load_before = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    res = engine.sensitivity_study(cohort, "x0", vary=vary, base=base)
    grid_s, grid_cpu = time.perf_counter() - t0, time.process_time() - c0
    table = res.table
    spread = {}
    if parallel != "serial":
        print(f"grid again, parallel={parallel} n_jobs={n_jobs} ...", flush=True)
        t0, c0 = time.perf_counter(), time.process_time()
        again = engine.sensitivity_study(cohort, "x0", vary=vary, base=base, parallel=parallel,
                                         n_jobs=n_jobs)
        spread = {"grid_parallel": parallel, "grid_n_jobs": n_jobs,
                  "grid_parallel_s": time.perf_counter() - t0,
                  "grid_parallel_cpu_s": time.process_time() - c0,
                  "grid_parallel_max_abs_diff": float(np.max(np.abs(
                      again.table["estimate"].to_numpy() - table["estimate"].to_numpy())))}
    picks = np.linspace(0, len(table) - 1, loop_sample).astype(int)
    loop, loop_cpu, build, diffs = [], [], [], []
    for i in picks:
        v = int(table["variant"].iloc[i])
        print(f"loop: engine.fit of variant {v} ...", flush=True)
        t1 = time.perf_counter()
        kwargs = res.fit_arguments(v)
        t2, c2 = time.perf_counter(), time.process_time()
        alone = engine.fit(**kwargs)
        alone.summary                       # the grid reports each variant's CI and p too
        loop.append(time.perf_counter() - t2)
        loop_cpu.append(time.process_time() - c2)
        build.append(t2 - t1)
        diffs.append(abs(alone.coef["x0"] - table["estimate"].iloc[i]))
    loop_s = float(np.mean(loop)) * len(table)
    best_s = min(grid_s, spread.get("grid_parallel_s", np.inf))
    record = {"experiment": "sensitivity_grid", "backend": backend, "n": n, "p": p,
              "density": density, "tol": tol,
              "variants": len(table), "grid_s": grid_s, "grid_cpu_s": grid_cpu,
              "load_before_grid": load_before, "grid_timings": res.timings,
              "estimate": res.cost, "not_converged": int((~table["converged"]).sum()),
              "errors": int((table["error"] != "").sum()),
              "loop_sample": len(picks), "loop_fit_s_mean": float(np.mean(loop)),
              "loop_fit_cpu_s_mean": float(np.mean(loop_cpu)),
              "loop_build_s_mean": float(np.mean(build)), "loop_s_extrapolated": loop_s,
              "speedup": loop_s / best_s, "speedup_serial_grid": loop_s / grid_s,
              "max_abs_diff_sampled": float(np.max(diffs)),
              "variant_s_median": float(table["seconds"].median()),
              **spread, "machine": machine_info()}
    load = record["machine"]["load_average_1_5_15min"]
    text = "\n".join([
        f"# Sensitivity grid ({backend}): N={n:,}, P={p:,} sparse ({density}), {len(table)} variants "
        f"({masks} subgroups x {sets} adjustment sets x {penalties} L1 penalties), "
        f"tol {tol:g}", "",
        f"CPU: {record['machine']['cpu']}, {record['machine']['logical_cores']} cores; load "
        f"average {load_before:.1f} before the grid, {load[0]:.1f} / {load[1]:.1f} / "
        f"{load[2]:.1f} (1 / 5 / 15 min) at the end", "",
        "| | wall seconds | CPU seconds (this process) |", "|---|---:|---:|",
        f"| grid (engine.sensitivity_study, serial) | {grid_s:.1f} | {grid_cpu:.1f} |",
        *([f"| grid, parallel={parallel} ({n_jobs or 'usable cores'} workers, their "
           f"start-up included) | {spread['grid_parallel_s']:.1f} | "
           f"{spread['grid_parallel_cpu_s']:.1f} |"] if spread else []),
        f"| one variant in the grid (median) | {record['variant_s_median']:.2f} | |",
        f"| one engine.fit of a variant (mean of {len(picks)}) | {np.mean(loop):.2f} | "
        f"{np.mean(loop_cpu):.2f} |",
        f"| {len(table)} engine.fit calls (extrapolated) | {loop_s:.1f} | "
        f"{np.mean(loop_cpu) * len(table):.1f} |",
        f"| building one variant's cohort (mean, not in the loop's time) | "
        f"{np.mean(build):.2f} | |", "",
        f"speed-up over the loop: {record['speedup']:.1f}x wall (the serial grid: "
        f"{record['speedup_serial_grid']:.1f}x wall, "
        f"{np.mean(loop_cpu) * len(table) / grid_cpu:.1f}x CPU); grid estimate before running: "
        f"{res.cost['seconds']:.0f} s, {res.cost['bytes'] / 1e9:.2f} GB; sampled fits agree "
        f"to {record['max_abs_diff_sampled']:.1e}; errors {record['errors']}, not converged "
        f"{record['not_converged']}" + (f"; the parallel grid's estimates differ from the "
                                          f"serial one's by at most "
                                          f"{spread['grid_parallel_max_abs_diff']:.1e}"
                                          if spread else "")])
    suffix = ("" if backend == "cpu" else f"_{backend}") + ("" if tol == 1e-9 else f"_tol{tol:g}")
    return save(record, text, out, f"sensitivity_n{n}_p{p}_v{len(table)}{suffix}")
