"""The dense regime of the Cox fit: a nearly unpenalised L1 fit (lam = 1) with the inner solve
column by column against through the dense working set's Gram matrix (backends/diagonal_step),
A/B in one process; and the unpenalised fit with its standard errors, end to end.

``python -m bench dense --n 1000000 --p 1000`` (weak fit) and ``python -m bench dense --n 100000
--p 1000 --penalty none`` (unpenalised fit + SE).  Kernel seconds from bench.cost_model's
counter.
"""
import time

import numpy as np

import engine
from bench.cost_model import Counter
from bench.report import machine_info, save
from engine.regression.backends import diagonal_step

INNER = ("column", "gram")


def run(n, p, density=0.05, penalty="l1", lam=1.0, repeats=1, seed=0, tol=1e-9,
        out="bench/results"):
    """Time the weak L1 fit with each inner solve (``penalty="l1"``), or the unpenalised fit
    and its standard errors (``penalty="none"``)."""
    cohort = engine.simulate(n, p, density=density, seed=seed)
    warm = engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))
    _ = warm.se       # JIT
    if penalty == "none":
        return _unpenalised(cohort, n, p, density, repeats, tol, out)
    problem = engine.Problem.from_cohort(cohort, engine.FitOptions(tol=tol))
    fits = []
    rows = diagonal_step.DENSE_MIN_ROWS
    with Counter() as counter:
        for _ in range(repeats):
            for inner in INNER:
                diagonal_step.DENSE_MIN_ROWS = n + 1 if inner == "column" else 0
                counter.take()
                t0, c0 = time.perf_counter(), time.process_time()
                try:
                    res = engine.fit_problem(problem, engine.L1(lam))
                finally:
                    diagonal_step.DENSE_MIN_ROWS = rows
                wall = time.perf_counter() - t0
                fits.append({"inner": inner, "wall_s": wall, "cpu_s": time.process_time() - c0,
                             "iterations": res.n_iter,
                             "nonzero": int(np.count_nonzero(res.beta)),
                             "objective": float(-res.loglik + lam * np.abs(res.beta).sum()),
                             "kernels": counter.take()})
                print(f"{inner}: {wall:.2f} s, {res.n_iter} steps", flush=True)
    record = {"experiment": "dense_inner", "n": n, "p": p, "density": density, "lambda": lam,
              "tol": tol, "events": int(cohort.n_events), "fits": fits,
              "machine": machine_info()}
    lines = [f"# Weak L1 fit (lam = {lam}), N={n:,}, P={p:,}, density {density}, tol {tol}", "",
             "| inner solve | wall (s) | CPU (s) | outer steps | non-zero | objective | "
             "kernel: calls, s |", "|---|---:|---:|---:|---:|---:|---|"]
    for f in fits:
        lines.append(f"| {f['inner']} | {f['wall_s']:.2f} | {f['cpu_s']:.2f} | {f['iterations']} | "
                     f"{f['nonzero']} | "
                     f"{f['objective']:.6f} | {_kernels(f['kernels'])} |")
    lines += ["", _machine(record)]
    return save(record, "\n".join(lines), out, f"dense_inner_n{n}_p{p}")


def _unpenalised(cohort, n, p, density, repeats, tol, out):
    fits = []
    for _ in range(repeats):
        with Counter() as counter:
            t0, c0 = time.perf_counter(), time.process_time()
            res = engine.fit(cohort, tol=tol)
            t1 = time.perf_counter()
            se = res.se
            t2, c2 = time.perf_counter(), time.process_time()
            kernels = counter.take()
        fits.append({"fit_s": t1 - t0, "se_s": t2 - t1, "total_s": t2 - t0, "cpu_s": c2 - c0,
                     "iterations": res.n_iter, "loglik": float(res.loglik),
                     "timings": dict(res.timings), "kernels": kernels,
                     "se_median": float(np.nanmedian(se))})
        print(f"fit {t1 - t0:.2f} s + se {t2 - t1:.2f} s (CPU {c2 - c0:.2f} s)", flush=True)
    record = {"experiment": "unpenalised_se", "n": n, "p": p, "density": density, "tol": tol,
              "events": int(cohort.n_events), "fits": fits, "machine": machine_info()}
    lines = [f"# Unpenalised Cox with standard errors, N={n:,}, P={p:,}, density {density}, "
             f"tol {tol}", "",
             "| fit (s) | of it: prepare, solve | SE (s) | total (s) | CPU (s) | steps | log-lik | "
             "kernel: calls, s |", "|---:|---|---:|---:|---:|---:|---:|---|"]
    for f in fits:
        t = f["timings"]
        lines.append(f"| {f['fit_s']:.2f} | {t.get('prepare', 0):.2f}, {t.get('solve', 0):.2f} | "
                     f"{f['se_s']:.2f} | {f['total_s']:.2f} | {f['cpu_s']:.2f} | "
                     f"{f['iterations']} | "
                     f"{f['loglik']:.6f} | {_kernels(f['kernels'])} |")
    lines += ["", _machine(record)]
    return save(record, "\n".join(lines), out, f"unpenalised_se_n{n}_p{p}")


def _kernels(kernels):
    ks = sorted(kernels.items(), key=lambda kv: -kv[1]["s"])
    return "; ".join(f"{k} {v['calls']}, {v['s']:.2f}" for k, v in ks)


def _machine(record):
    m = record["machine"]
    return (f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
            f"{m['load_average_1_5_15min']}; OPENBLAS_NUM_THREADS=1 unless said.")
