"""The cost of the robust (sandwich) variance against one more fit (issue 31).

For each N in ``sizes`` (P columns at ``density``, non-integer case weights as IPTW, one cluster
per row): the L1 Cox fit at ``ratio`` x lambda_max with the treatment ``x0`` unpenalised
(timed: "one more fit"), then on that fit (1) the robust SE of its unpenalised column, what the
user sees, (2) the model-based SE of the same, and (3) over all P columns at the fitted beta, what
an unpenalised fit of P columns needs: the information (the model-based variance, which the
robust one reuses) and, apart, the robust variance's extra work, the middle: P score scans
(engine/backends/cox_score.py) and an (N x P)' (N x P) product of dense cluster scores, summed in block pairs past engine.regression.variance.MEAT_MEMORY.
"""
import time

import numpy as np

import engine
from bench.report import machine_info, save
from engine.regression.robust import robust_middle
from engine.data.simulate import simulate_arrays


def _cohort(n, p, density, seed):
    t, e, X, _, _ = simulate_arrays(n, p, density=density, seed=seed)
    w = np.random.default_rng(seed).uniform(0.5, 3.0, n)
    return engine.Cohort.from_arrays(time=t, event=e, X=X, names=[f"x{j}" for j in range(p)],
                                     weights=w)


def _seconds(value):
    return "not run" if value is None else f"{value:.1f}"


def _timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def run(sizes, p, density=0.05, ratio=0.1, seed=0, out="bench/results", all_columns=True,
        backend="cpu"):
    """Time the fit and the variances at each N on ``backend`` ("cpu" or "gpu"); write JSON +
    Markdown; return the record."""
    warm = _cohort(500, 8, 0.3, seed)
    w_res = engine.fit(warm, penalty=engine.L1(1.0), unpenalized=["x0"], backend=backend)
    _ = w_res.se_robust, w_res.se_model
    robust_middle(w_res.problem, w_res.beta, np.arange(8))
    rows = []
    for n in sizes:
        print(f"simulating N={n:,} P={p:,} density={density}", flush=True)
        cohort = _cohort(n, p, density, seed)
        lam = ratio * float(np.max(np.abs(engine.gradient(cohort, np.zeros(p)))))
        fit_s, res = _timed(lambda: engine.fit(cohort, penalty=engine.L1(lam),
                                               unpenalized=["x0"], backend=backend))
        model_s, se_model = _timed(lambda: res.se_model)
        robust_s, se = _timed(lambda: res.se_robust)     # the extra: it reuses I^-1
        row = {"n": n, "p": p, "nnz": int(cohort.X.nnz), "fit_s": fit_s,
               "nonzero": int(np.count_nonzero(res.coef)), "robust_se_x0_s": robust_s,
               "model_se_x0_s": model_s, "se_robust_x0": float(se["x0"]),
               "se_model_x0": float(se_model["x0"])}
        if all_columns:
            cols = np.arange(p)
            print(f"  the {p} x {p} robust covariance ...", flush=True)
            row["model_all_s"], _ = _timed(lambda: res.problem.model.information(cols))
            row["robust_all_s"], _ = _timed(lambda: robust_middle(res.problem, res.beta, cols))
        rows.append(row)
        print(row, flush=True)
    record = {"experiment": "robust_variance", "density": density, "ratio": ratio,
              "backend": backend, "rows": rows, "machine": machine_info()}
    m = record["machine"]
    lines = [f"# Robust (sandwich) variance against one more fit: P={p:,}, density {density}, "
             f"L1 at {ratio} x lambda_max with x0 unpenalised, uniform(0.5, 3) weights, "
             f"backend {backend}",
             "", f"Machine: {m['cpu']}, load average {m['load_average_1_5_15min']} at the end.", "",
             "| N | fit (s) | model SE of x0 (s) | robust SE of x0, extra (s) | "
             f"information {p}x{p} (s) | robust middle {p}x{p} (s) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['fit_s']:.2f} | {r['model_se_x0_s']:.3f} | "
                     f"{r['robust_se_x0_s']:.3f} | {_seconds(r.get('model_all_s'))} | "
                     f"{_seconds(r.get('robust_all_s'))} |")
    name = (f"robust_variance_p{p}_n{max(sizes)}" + ("" if all_columns else "_x0")
            + ("" if backend == "cpu" else f"_{backend}"))
    return save(record, "\n".join(lines), out, name)
