"""The cost model of one L1 Cox fit, measured: where the seconds go, kernel by kernel.

Every Numba kernel the fit calls is wrapped to count its calls and time them; the same fit is
run with the plain proximal-Newton step and with the plane correction (backends/cox_subspace),
A/B in one process, the best of ``repeats`` each.  Also timed: the simulation, the sort
(Problem.from_cohort), lambda_max; and the bytes per row of the sorted layout.  docs/cost_model.md
reads these numbers.
"""
import resource
import time
from collections import defaultdict

import numpy as np

import engine
from bench.report import machine_info, save
from engine.core import weighted_gram
from engine.regression.backends import (cox_cpu, cox_information, cox_kernels,
    diagonal_step_kernels, hazard_state, linear_predictor, row_block_parallel)
from engine.regression.drivers.path import lambda_max_of

# (module, kernel, what one call reads): an "X pass" touches every stored non-zero of the
# columns it is given once; a "row pass" every sorted row a fixed number of times.
KERNELS = [
    (cox_kernels, "risk_set_pass", "row pass (forward + 1-2 backward suffix scans)"),
    (cox_information, "event_means", "row pass: risk-set means at the event terms (Newton)"),
    (cox_kernels, "coordinate_grad_hess", "row pass (one column)"),
    (hazard_state, "set_linear_predictor", "X pass: eta = X beta (line search)"),
    (hazard_state, "column_dots", "X pass: X'v, the full gradient (KKT checks)"),
    (hazard_state, "column_dots_on", "X pass over the L1 zeros: their gradient (KKT checks)"),
    (cox_cpu, "set_linear_predictor", "X pass: X d of the plane step"),
    (cox_cpu, "direction_curvature", "row pass: 2 x 2 exact curvature"),
    (diagonal_step_kernels, "quadratic_cd_u", "X passes: inner coordinate descent"),
    (row_block_parallel, "row_counts", "X pass over the working set (Gram or not)"),
    (row_block_parallel, "row_block", "X pass: working set as CSR"),
    (row_block_parallel, "dense_block", "X pass: its columns stored in most rows, row-major"),
    (row_block_parallel, "gram_matrix", "rows x nnz_row^2"),
    (row_block_parallel, "block_dots", "X pass over the working set"),
    (row_block_parallel, "block_image", "row pass over the working set's block: X d"),
    (diagonal_step_kernels, "quadratic_cd_gram", "s^2 per cycle"),
    (weighted_gram, "weighted_gram", "rows x nnz_row^2 / 2: a dense working set's Gram matrix"),
    (linear_predictor, "column_dots_on", "X pass over a dense working set: X'v"),
    (linear_predictor, "set_linear_predictor", "X pass: X delta of a dense Gram solve"),
]


class Counter:
    """Wraps the kernels of KERNELS; ``take()`` returns and clears calls and seconds."""

    def __init__(self):
        self.calls = defaultdict(int)
        self.seconds = defaultdict(float)
        self._saved = []

    def __enter__(self):
        for module, name, _ in KERNELS:
            original = getattr(module, name)
            self._saved.append((module, name, original))
            setattr(module, name, self._wrap(f"{module.__name__.split('.')[-1]}.{name}",
                                             original))
        return self

    def __exit__(self, *exc):
        for module, name, original in self._saved:
            setattr(module, name, original)

    def _wrap(self, key, kernel):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = kernel(*args, **kwargs)
            self.seconds[key] += time.perf_counter() - t0
            self.calls[key] += 1
            return out
        return timed

    def take(self):
        out = {k: {"calls": self.calls[k], "s": self.seconds[k]} for k in self.calls}
        self.calls.clear()
        self.seconds.clear()
        return out


def layout_bytes(problem):
    """Bytes of the sorted layout and the backend's state, per row and per stored non-zero."""
    md = problem.model.data
    state = problem.model.backend.state
    per_nnz = md.indices.itemsize + (md.values.size * 8 / max(md.indices.size, 1))
    rows = (md.order.nbytes + md.stop.nbytes + md.weights.nbytes + md.flags.nbytes
            + (0 if md.start is None else md.start.nbytes + md.start_order.nbytes))
    state_rows = (state.eta.nbytes + state.D.nbytes + state.wev.nbytes + state.event.nbytes
                  + state.flags_built.nbytes + problem.model.backend._scratch.nbytes)
    return {"layout_bytes_per_row": rows / md.n, "state_bytes_per_row": state_rows / md.n,
            "bytes_per_nonzero": per_nnz, "nnz": int(md.indices.size)}


def run(n, p, density=0.05, ratios=(0.1,), ties="breslow", repeats=2, seed=0, tol=1e-9,
        lambdas=(), steps=("plain", "plane"), out="bench/results"):
    """Profile fits at ``ratios`` x lambda_max and at the absolute strengths ``lambdas`` (e.g.
    1.0: nearly unpenalised), with the ``steps`` asked ("plain", "plane")."""
    t0 = time.perf_counter()
    cohort = engine.simulate(n, p, density=density, seed=seed)
    t_sim = time.perf_counter() - t0
    engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))  # JIT
    options = engine.FitOptions(ties=ties, tol=tol)
    t0, c0 = time.perf_counter(), time.process_time()
    problem = engine.Problem.from_cohort(cohort, options)
    t_sort, c_sort = time.perf_counter() - t0, time.process_time() - c0
    penalized = problem.penalty_vectors(engine.L1(1.0))[0] > 0
    t0 = time.perf_counter()
    top = lambda_max_of(problem, penalized)
    t_top = time.perf_counter() - t0
    fits = []
    with Counter() as counter:
        for ratio in list(ratios) + [lam / top for lam in lambdas]:
            best = {}
            for _ in range(repeats):
                for plane in [s == "plane" for s in steps]:
                    cox_cpu.CoxCpuBackend.plane_step = plane
                    counter.take()
                    t0, c0 = time.perf_counter(), time.process_time()
                    try:
                        res = engine.fit_problem(problem, engine.L1(ratio * top))
                    finally:
                        cox_cpu.CoxCpuBackend.plane_step = True
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    kernels = counter.take()
                    if plane not in best or wall < best[plane]["wall_s"]:
                        best[plane] = {
                            "ratio": ratio, "lambda": ratio * top, "plane_step": plane, "wall_s": wall,
                            "cpu_s": cpu,
                            "iterations": res.n_iter, "converged": bool(res.converged),
                            "nonzero": int(np.count_nonzero(res.beta)),
                            "objective": float(-res.loglik + ratio * top * np.abs(res.beta).sum()),
                            "kernels": kernels}
                    print(f"ratio {ratio} plane {plane}: {wall:.2f} s, {res.n_iter} steps",
                          flush=True)
            fits += list(best.values())
    record = {"experiment": "cost_model", "n": n, "p": p, "density": density, "ties": ties,
              "tol": tol, "events": int(cohort.n_events), "lambda_max": top,
              "simulate_s": t_sim, "sort_s": t_sort, "sort_cpu_s": c_sort,
              "lambda_max_s": t_top,
              **layout_bytes(problem), "fits": fits,
              "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
              "machine": machine_info()}
    text = _markdown(record)
    return save(record, text, out, f"cost_model_n{n}_p{p}_{ties}")


def _markdown(r):
    lines = [f"# Cost model: N={r['n']:,}, P={r['p']:,} (density {r['density']}, "
             f"{r['events']:,} events, {r['nnz']:,} non-zeros), {r['ties']} ties, tol {r['tol']}",
             "", f"simulate {r['simulate_s']:.2f} s; sort (Problem.from_cohort) "
             f"{r['sort_s']:.2f} s (CPU {r['sort_cpu_s']:.2f} s); lambda_max "
             f"{r['lambda_max_s']:.2f} s; peak RSS "
             f"{r['peak_rss_gb']:.2f} GB", "",
             f"sorted layout {r['layout_bytes_per_row']:.0f} B/row + "
             f"{r['bytes_per_nonzero']:.0f} B/non-zero; backend state "
             f"{r['state_bytes_per_row']:.0f} B/row", "",
             "| lambda/lambda_max | step | wall (s) | CPU (s) | outer steps | non-zero | "
             "objective | kernel: calls, s |", "|---:|---|---:|---:|---:|---:|---:|---|"]
    for f in r["fits"]:
        ks = sorted(f["kernels"].items(), key=lambda kv: -kv[1]["s"])
        kern = "; ".join(f"{k} {v['calls']}, {v['s']:.2f}" for k, v in ks)
        lines.append(f"| {f['ratio']:.3g} | {'plane' if f['plane_step'] else 'plain'} | "
                     f"{f['wall_s']:.2f} | {f['cpu_s']:.2f} | {f['iterations']} | "
                     f"{f['nonzero']} | "
                     f"{f['objective']:.6f} | {kern} |")
    m = r["machine"]
    lines += ["", f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
              f"{m['load_average_1_5_15min']}; OPENBLAS_NUM_THREADS=1; the plain and plane fits "
              "alternate in one process, best of the repeats."]
    return "\n".join(lines)
