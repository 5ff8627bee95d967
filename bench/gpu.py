"""CPU against GPU in the same run (Yang2024 Fig. 2, Yang2022 Fig. 4): time per CCD cycle and
per whole fit at N = 100,000 and 1,000,000, P = 1,000, 5% density, K = 1, 10, 50,000 and N/2
strata, L1 at ``ratio`` x lambda_max.

Per cycle: one sweep of the papers' CCD over every coordinate (engine/regression/solvers/ccd.py: on the
GPU the backend's ccd_cycle, nothing crossing to the host per coordinate), from beta = 0, the
best of ``repeats``; on the GPU twice, replayed from a captured CUDA graph (the default) and
launched kernel by kernel from Python, with the one-off capture time.  Per fit: engine.fit with
solver="ccd" (the papers') and solver="auto".  Also reported: K = N/2 against K = 1 per N.
Above ``cpu_ccd_max_n`` rows the CPU's exact-CCD fit (minutes at N = 10^6) is not run: its time
is the GPU fit's cycle count times the CPU's measured cycle time (the same algorithm takes the
same cycles), flagged ``cpu_ccd_fit_estimated``.
Needs CuPy and a CUDA device; without them it refuses with "no CUDA device" before simulating.
"""
import json
import time
from pathlib import Path

import numpy as np

import engine
from bench.problems import make_problem
from bench.report import machine_info, matplotlib_charts
from engine.core.device import device_count
from engine.regression.models.cox import CoxModel
from engine.regression.solvers.ccd import cycle
from engine.regression.solvers.state import SolverState

SIZES = (100_000, 1_000_000)
STRATA = (1, 10, 50_000, "N/2")


def run(sizes=SIZES, p=1000, density=0.05, strata=STRATA, ratio=0.1, seed=0, repeats=3,
        out="bench/results", cpu_ccd_max_n=200_000, cpu=True):
    """Time CCD cycles and fits on both backends (``cpu=False``: the GPU alone, for sizes whose
    CPU side would take the device's whole time limit); write JSON + Markdown after every row
    (a run stopped at a time limit keeps what it measured); return the record."""
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
            row["cpu_cycle_s"] = (_cycle_seconds(cohort, problem.lam, "cpu", repeats)[0]
                                  if cpu else float("nan"))
            row["gpu_cycle_s"], row["gpu_graph_capture_s"] = _cycle_seconds(
                cohort, problem.lam, "gpu", repeats)
            row["gpu_launches_cycle_s"], _ = _cycle_seconds(cohort, problem.lam, "gpu", repeats,
                                                            graphs=False)
            for backend in ("gpu", "cpu") if cpu else ("gpu",):
                for solver in ("ccd", "auto"):
                    if backend == "cpu" and solver == "ccd" and n > cpu_ccd_max_n:
                        row["cpu_ccd_fit_s"] = row["cpu_cycle_s"] * row["gpu_ccd_iter"]
                        row["cpu_ccd_fit_estimated"] = True
                        continue
                    t0 = time.perf_counter()
                    res = engine.fit(cohort, penalty=lam, solver=solver, backend=backend)
                    row[f"{backend}_{solver}_fit_s"] = time.perf_counter() - t0
                    row[f"{backend}_{solver}_iter"] = res.n_iter
                    row[f"{backend}_{solver}_coef"] = res.coef.to_numpy()
                    print(f"  fit {backend} {solver}: {row[f'{backend}_{solver}_fit_s']:.2f} s, "
                          f"{res.n_iter} iterations", flush=True)
            row.setdefault("cpu_ccd_fit_s", float("nan"))
            row.setdefault("cpu_auto_fit_s", float("nan"))
            for solver in ("ccd", "auto"):
                a, b = row.pop(f"cpu_{solver}_coef", None), row.pop(f"gpu_{solver}_coef")
                row[f"{solver}_max_abs_coef_diff"] = (float(np.max(np.abs(a - b)))
                                                      if a is not None else float("nan"))
            row["cycle_speedup"] = row["cpu_cycle_s"] / row["gpu_cycle_s"]
            row["fit_speedup_vs_cpu_ccd"] = row["cpu_ccd_fit_s"] / row["gpu_auto_fit_s"]
            print(f"  cycle: cpu {row['cpu_cycle_s']:.3f} s, gpu {row['gpu_cycle_s']:.3f} s "
                  f"(graph), {row['gpu_launches_cycle_s']:.3f} s (launches)", flush=True)
            rows.append(row)
            record = {"experiment": "gpu", "ratio": ratio, "seed": seed, "rows": rows,
                      "machine": {**machine_info(), "gpu": _device_name()}}
            _write(record, p, density, out, sizes)
    print(_markdown(record, p, density))
    return record


def _device_name() -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _cycle_seconds(cohort, lam, backend, repeats, graphs=True):
    """Best wall time of ``repeats`` full CCD sweeps from beta = 0 (device work finished), after
    one untimed warm-up sweep (Numba compilation; on the GPU the graph capture), and the warm-up's
    excess over the best."""
    model = CoxModel(cohort, backend=backend)
    if backend == "gpu":
        model.backend.use_graphs = graphs
    sweep = getattr(model.backend, "ccd_cycle", None)
    times = []
    for _ in range(1 + repeats):
        model.set_beta(np.zeros(model.p))
        state = SolverState(beta=np.zeros(model.p), lam1=np.full(model.p, lam),
                            lam2=np.zeros(model.p), frozen=np.zeros(model.p, bool))
        t0 = time.perf_counter()
        if sweep is not None:
            sweep(state, range(model.p), 30.0, model.scale)   # returns after a device sync
        else:
            cycle(model, state, range(model.p))
        times.append(time.perf_counter() - t0)
    best = min(times[1:])
    return best, times[0] - best


def _largest(*values):
    """The largest of the measured values (NaN: not measured), NaN when none was."""
    return max((v for v in values if v == v), default=float("nan"))


def _strata_ratio(rows, n):
    by_k = {r["strata"]: r["gpu_auto_fit_s"] for r in rows if r["n"] == n}
    return by_k.get(n // 2, 0.0) / by_k[1] if 1 in by_k and n // 2 in by_k else None


def _markdown(record, p, density):
    lines = [f"# CPU vs GPU ({record['machine']['gpu']}): P={p:,}, density {density}, L1 at "
             f"{record['ratio']} x lambda_max", "",
             "| N | K | CCD cycle CPU (s) | GPU graph (s) | GPU launches (s) | speedup | "
             "fit ccd CPU / GPU (s) | fit auto CPU / GPU (s) | GPU auto vs CPU ccd | "
             "max coef diff |", "|---:|---:|---:|---:|---:|---:|---|---|---:|---:|"]
    for r in record["rows"]:
        lines.append(f"| {r['n']:,} | {r['strata']:,} | {r['cpu_cycle_s']:.3f} | "
                     f"{r['gpu_cycle_s']:.4f} | {r['gpu_launches_cycle_s']:.4f} | "
                     f"{r['cycle_speedup']:.1f} | "
                     f"{r['cpu_ccd_fit_s']:.2f}{'*' if r.get('cpu_ccd_fit_estimated') else ''}"
                     f" / {r['gpu_ccd_fit_s']:.2f} | "
                     f"{r['cpu_auto_fit_s']:.2f} / {r['gpu_auto_fit_s']:.2f} | "
                     f"{r['fit_speedup_vs_cpu_ccd']:.1f}x | "
                     f"{_largest(r['ccd_max_abs_coef_diff'], r['auto_max_abs_coef_diff']):.1e} |")
    lines += ["", "\\* CPU exact-CCD fit estimated: GPU cycles x CPU cycle time.", "",
              "K = N/2 against K = 1 (GPU auto fit time): " + ", ".join(
        f"N={n:,}: {_strata_ratio(record['rows'], n):.2f}x"
        for n in sorted({r['n'] for r in record['rows']}) if _strata_ratio(record['rows'], n))]
    return "\n".join(lines)


def _write(record, p, density, out, sizes):
    Path(out).mkdir(parents=True, exist_ok=True)
    # not Path.with_suffix: the density has a dot
    stem = f"gpu_n{'-'.join(str(n) for n in sizes)}_p{p}_d{density}"
    (Path(out) / f"{stem}.json").write_text(json.dumps(record, indent=2, default=float))
    (Path(out) / f"{stem}.md").write_text(_markdown(record, p, density) + "\n")


def chart(paths, png):
    """Fit and CCD-cycle seconds against N, CPU and GPU, K = 1, from the JSON records of
    ``run`` at several sizes (log-log; HoloViews with matplotlib, as bench/sweep.py)."""
    with matplotlib_charts() as hv:
        rows = [r for p in paths for r in json.loads(Path(p).read_text())["rows"]
                if r["strata"] == 1]
        rows.sort(key=lambda r: r["n"])
        series = {"GPU auto fit": ("gpu_auto_fit_s", "#1f77b4"),
                  "GPU exact-CCD fit": ("gpu_ccd_fit_s", "#2ca02c"),
                  "CPU auto fit": ("cpu_auto_fit_s", "#ff7f0e"),
                  "CPU exact-CCD fit": ("cpu_ccd_fit_s", "#d62728"),
                  "GPU CCD cycle": ("gpu_cycle_s", "#9467bd"),
                  "CPU CCD cycle": ("cpu_cycle_s", "#8c564b")}
        curves = []
        for label, (key, color) in series.items():
            pts = [(r["n"], r[key]) for r in rows if r.get(key) == r.get(key)]     # NaN: not run
            if pts:
                curves.append(hv.Curve(pts, "N", "seconds", label=label).opts(color=color)
                              * hv.Scatter(pts, "N", "seconds", label=label).opts(color=color))
        overlay = hv.Overlay(curves).opts(logx=True, logy=True, fig_size=150,
                                          legend_position="top_left",
                                          title="Cox L1, P = 1,000, 5% density: CPU vs GPU")
        hv.save(overlay, str(png), fmt="png")


if __name__ == "__main__":
    import sys
    if len(sys.argv) < 4 or sys.argv[1] != "chart":
        raise SystemExit("usage: python -m bench.gpu chart OUT.png RECORD.json [RECORD.json ...]")
    chart(sys.argv[3:], sys.argv[2])
