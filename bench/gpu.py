"""CPU against GPU in the same run (seed 000 Fig. 2, seed 001 Fig. 4): time per CCD cycle and
per whole fit at N = 100,000 and 1,000,000, P = 1,000, 5% density, K = 1, 10, 50,000 and N/2
strata, L1 at ``ratio`` x lambda_max.

Per cycle: one sweep of the papers' CCD over every coordinate (engine/solvers/ccd.py: on the
GPU the backend's ccd_cycle, nothing crossing to the host per coordinate), from beta = 0, the
best of ``repeats``.  Per fit: engine.fit with solver="ccd" (the papers') and solver="auto".
Needs CuPy and a CUDA device; without them it refuses with "no CUDA device" before simulating.
"""
import json
import time
from pathlib import Path

import numpy as np

import engine
from bench.problems import make_problem
from bench.report import machine_info
from engine.backends.gpu import device_count
from engine.models.cox import CoxModel
from engine.solvers.ccd import SolverState, cycle

SIZES = (100_000, 1_000_000)
STRATA = (1, 10, 50_000, "N/2")


def run(sizes=SIZES, p=1000, density=0.05, strata=STRATA, ratio=0.1, seed=0, repeats=3,
        out="bench/results"):
    """Time CCD cycles and fits on both backends; write JSON + Markdown; return the record."""
    if device_count() < 1:
        raise SystemExit("bench gpu: no CUDA device (CuPy missing or no GPU visible); the GPU "
                         "benchmark needs one.")
    rows = []
    for n in sizes:
        for k in strata:
            k_n = n // 2 if k == "N/2" else int(k)
            print(f"simulating N={n:,} P={p:,} K={k_n:,} ...", flush=True)
            problem = make_problem(n, p, density, k_n, "l1", ratio, seed)
            cohort = problem.cohort
            lam = engine.L1(problem.lam)
            row = {"n": n, "p": p, "density": density, "strata": k_n, "lambda": problem.lam}
            for backend in ("cpu", "gpu"):
                row[f"{backend}_cycle_s"] = _cycle_seconds(cohort, problem.lam, backend, repeats)
                for solver in ("ccd", "auto"):
                    t0 = time.perf_counter()
                    res = engine.fit(cohort, penalty=lam, solver=solver, backend=backend)
                    row[f"{backend}_{solver}_fit_s"] = time.perf_counter() - t0
                    row[f"{backend}_{solver}_iter"] = res.n_iter
                    row[f"{backend}_{solver}_coef"] = res.coef.to_numpy()
            for solver in ("ccd", "auto"):
                a, b = row.pop(f"cpu_{solver}_coef"), row.pop(f"gpu_{solver}_coef")
                row[f"{solver}_max_abs_coef_diff"] = float(np.max(np.abs(a - b)))
            row["cycle_speedup"] = row["cpu_cycle_s"] / row["gpu_cycle_s"]
            print(f"  cycle: cpu {row['cpu_cycle_s']:.3f} s, gpu {row['gpu_cycle_s']:.3f} s",
                  flush=True)
            rows.append(row)
    record = {"experiment": "gpu", "ratio": ratio, "seed": seed, "rows": rows,
              "machine": machine_info()}
    return _write(record, p, density, out)


def _cycle_seconds(cohort, lam, backend, repeats):
    """Best wall time of one full CCD sweep from beta = 0 (device work finished)."""
    model = CoxModel(cohort, backend=backend)
    sweep = getattr(model.backend, "ccd_cycle", None)
    best = np.inf
    for _ in range(repeats):
        model.set_beta(np.zeros(model.p))
        state = SolverState(beta=np.zeros(model.p), lam1=np.full(model.p, lam),
                            lam2=np.zeros(model.p), frozen=np.zeros(model.p, bool))
        t0 = time.perf_counter()
        if sweep is not None:
            sweep(state, range(model.p), 30.0, model.scale)   # returns after a device sync
        else:
            cycle(model, state, range(model.p))
        best = min(best, time.perf_counter() - t0)
    return best


def _write(record, p, density, out):
    lines = [f"# CPU vs GPU: P={p:,}, density {density}, L1 at {record['ratio']} x lambda_max",
             "", "| N | K | CCD cycle CPU (s) | GPU (s) | speedup | fit ccd CPU / GPU (s) | "
             "fit auto CPU / GPU (s) | max coef diff |", "|---:|---:|---:|---:|---:|---|---|---:|"]
    for r in record["rows"]:
        lines.append(f"| {r['n']:,} | {r['strata']:,} | {r['cpu_cycle_s']:.3f} | "
                     f"{r['gpu_cycle_s']:.3f} | {r['cycle_speedup']:.1f} | "
                     f"{r['cpu_ccd_fit_s']:.2f} / {r['gpu_ccd_fit_s']:.2f} | "
                     f"{r['cpu_auto_fit_s']:.2f} / {r['gpu_auto_fit_s']:.2f} | "
                     f"{max(r['ccd_max_abs_coef_diff'], r['auto_max_abs_coef_diff']):.1e} |")
    text = "\n".join(lines)
    Path(out).mkdir(parents=True, exist_ok=True)
    stem = Path(out) / f"gpu_p{p}_d{density}"
    stem.with_suffix(".json").write_text(json.dumps(record, indent=2, default=float))
    stem.with_suffix(".md").write_text(text + "\n")
    print(text)
    return record
