"""Cross-validation at scale: the same k-fold x grid CV serially, over a process pool and on a
Dask LocalCluster (Yang2022 sec. 3.2: folds fitted in parallel threads or streams).

Mode "gpu" is the serial run with backend="gpu" (needs a CUDA device).
Every mode must give the same curve for the same seed (checked and reported); the times show
what the fan-out buys.  The process pool is spawned inside the timed call (its start is part of
the cost of a CV); the Dask cluster is started before it and its start-up is reported apart.
"""
import time

import numpy as np

import engine
from bench.report import machine_info, save

MODES = ("serial", "processes", "dask")   # and "gpu", asked for by name


def run(n, p, density=0.05, folds=10, grid=10, modes=MODES, n_jobs=2, seed=0,
        out="bench/results"):
    """Time ``engine.cross_validate`` in each mode; write JSON + Markdown; return the record."""
    print(f"simulating N={n:,} P={p:,} density={density}", flush=True)
    cohort = engine.simulate(n, p, density=density, seed=seed)
    engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))  # JIT
    runs, curves = {}, {}
    for mode in modes:
        print(f"cross-validating, parallel={mode} ...", flush=True)
        with _parallel(mode, n_jobs) as (parallel, startup_s):
            t0, c0 = time.perf_counter(), time.process_time()
            cv = engine.cross_validate(cohort, folds=folds, grid=grid, seed=seed,
                                       parallel=parallel, n_jobs=n_jobs,
                                       backend="gpu" if mode == "gpu" else "cpu")
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        curves[mode] = cv.curve["mean"].to_numpy()
        runs[mode] = {"wall_s": wall, "cpu_s": cpu, "startup_s": startup_s, "timings": cv.timings,
                      "lambda": cv.penalty.lam, "not_converged": cv.not_converged,
                      "nonzero_coef": int(np.count_nonzero(cv.fit.coef))}
        print(f"  {wall:.2f} s ({cpu:.2f} s CPU), lambda = {cv.penalty.lam:.6g}", flush=True)
    first = curves[modes[0]]
    for mode in modes:
        runs[mode]["max_abs_curve_diff"] = float(np.max(np.abs(curves[mode] - first)))
        runs[mode]["speedup"] = runs[modes[0]]["wall_s"] / runs[mode]["wall_s"]
    record = {"experiment": "cross_validation", "n": n, "p": p, "density": density,
              "folds": folds, "grid": grid, "n_jobs": n_jobs, "seed": seed,
              "events": cohort.n_events, "runs": runs, "machine": machine_info()}
    text = _markdown(record, modes)
    return save(record, text, out, f"cv_n{n}_p{p}_k{folds}_g{grid}")


class _parallel:
    """The ``parallel=`` argument for a mode; for Dask, a LocalCluster started (and timed)
    here and closed after the run."""

    def __init__(self, mode, n_jobs):
        self.mode, self.n_jobs = mode, n_jobs
        self.cluster = self.client = None

    def __enter__(self):
        if self.mode == "gpu":
            return None, 0.0
        if self.mode != "dask":
            return self.mode, 0.0
        import distributed

        t0 = time.perf_counter()
        self.cluster = distributed.LocalCluster(n_workers=self.n_jobs, threads_per_worker=1,
                                                processes=True, dashboard_address=":0")
        self.client = distributed.Client(self.cluster)
        return self.client, time.perf_counter() - t0

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
            self.cluster.close()


def _markdown(record, modes):
    r = record["runs"]
    lines = [f"# Cross-validation: N={record['n']:,}, P={record['p']:,} "
             f"(density {record['density']}, {record['events']:,} events), "
             f"{record['folds']}-fold x {record['grid']}-point L1 grid, {record['n_jobs']} workers",
             "", "| parallel | wall (s) | CPU, this process (s) | start-up (s) | speed-up | "
             "chosen lambda | max abs curve diff |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {m} | {r[m]['wall_s']:.2f} | {r[m]['cpu_s']:.2f} | {r[m]['startup_s']:.2f} | "
              f"{r[m]['speedup']:.2f} | {r[m]['lambda']:.6g} | {r[m]['max_abs_curve_diff']:.1e} |"
              for m in modes]
    lines += ["", f"machine: {record['machine']['cpu']}, {record['machine']['logical_cores']} "
              f"logical cores, load average {record['machine']['load_average_1_5_15min']}; the "
              "process pool's spawn is inside its wall time; CPU counts this process only (a "
              "serial run's whole work, not a pool's or Dask's workers)."]
    return "\n".join(lines)
