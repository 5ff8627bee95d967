"""Benchmark results as JSON and a Markdown table, with machine information.

A time ratio (peer time / survscan time) is printed only at equal accuracy: the peer's
coefficients within COEF_ATOL (max abs) of survscan's, or its penalised objective within
OBJ_RTOL (relative) of survscan's. Otherwise the table shows the discrepancy instead.
"""
import contextlib
import json
import os
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np
import psutil

COEF_ATOL = 1e-4
OBJ_RTOL = 1e-8
PACKAGES = ("numpy", "scipy", "numba", "pandas", "lifelines", "scikit-survival", "skglm",
            "scikit-learn")


def machine_info():
    """CPU model, cores, RAM, load average, Python and package versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_1_5_15min": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
        "blas": blas_info(),
        "gpu": gpu_info(),
    }


def gpu_info():
    """The CUDA device, its driver and the CUDA runtime CuPy runs on; None without one."""
    from engine.core.device import device_count, has_cupy

    if not has_cupy() or device_count() < 1:
        return None
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return {"name": props["name"].decode(), "memory_gb": round(props["totalGlobalMem"] / 2**30, 1),
            "driver": cupy.cuda.runtime.driverGetVersion(),
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(), "cupy": cupy.__version__}


def blas_info():
    """The BLAS kernels in use (threadpoolctl) and OPENBLAS_CORETYPE where it forces them: a
    forced Haswell core type halves DGEMM on an AVX-512 CPU (176 -> 101 GFLOP/s on this
    machine's two cores)."""
    from threadpoolctl import threadpool_info

    return {"libraries": [{k: i.get(k) for k in ("internal_api", "architecture", "num_threads")}
                          for i in threadpool_info() if i.get("user_api") == "blas"],
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}


def compare(reference, run):
    """Accuracy of `run` against survscan's `reference`:
    (agrees, max abs coef difference, relative objective difference)."""
    coef_diff = float(np.max(np.abs(run.coef - reference.coef)))
    obj_diff = abs(run.objective - reference.objective) / max(abs(reference.objective), 1e-300)
    return bool(coef_diff <= COEF_ATOL or obj_diff <= OBJ_RTOL), coef_diff, float(obj_diff)


def summarise(problem, runs, options):
    """The JSON-ready record of one benchmark."""
    reference = next((r for r in runs if r.tool == "survscan" and r.status == "ok"), None)
    tools = []
    for run in runs:
        row = {
            "tool": run.tool, "status": run.status, "reason": run.reason,
            "wall_s": run.wall_s, "peak_mem_mb": run.peak_mem_mb, "n_iter": run.n_iter,
            "converged": run.converged, "objective": run.objective,
            "nonzero_coef": None if run.coef is None else int(np.count_nonzero(run.coef)),
            "coef": None if run.coef is None else [float(c) for c in run.coef],
            "max_abs_coef_diff": None, "rel_objective_diff": None, "agrees": None,
            "ratio": None,
        }
        if run.status == "ok" and reference is not None and run is not reference:
            agrees, coef_diff, obj_diff = compare(reference, run)
            row.update(max_abs_coef_diff=coef_diff, rel_objective_diff=obj_diff, agrees=agrees,
                       ratio=run.wall_s / reference.wall_s if agrees else None)
        tools.append(row)
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "problem": {
            "n": problem.n, "p": problem.p, "density": problem.density,
            "nnz": int(problem.X.nnz), "n_strata": problem.n_strata,
            "events": int(problem.event.sum()), "penalty": problem.penalty,
            "ratio": problem.ratio, "lambda_max": problem.lam_max, "lambda": problem.lam,
            "seed": problem.seed,
        },
        "options": options,
        "accuracy_rule": {"coef_atol": COEF_ATOL, "objective_rtol": OBJ_RTOL},
        "tools": tools,
    }


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def markdown(record):
    """A Markdown report: problem, machine, and one row per tool."""
    pr, m = record["problem"], record["machine"]
    lines = [
        f"# Cox benchmark: N={pr['n']:,}, P={pr['p']:,}, density={pr['density']}, "
        f"strata={pr['n_strata']}, penalty={pr['penalty']} "
        f"(lambda = {pr['ratio']} x lambda_max = {pr['lambda']:.6g})",
        "",
        f"{pr['nnz']:,} non-zeros, {pr['events']:,} events, seed {pr['seed']}. "
        f"Machine: {m['cpu']}, {m['logical_cores']} logical cores, {m['ram_gb']} GB RAM, "
        f"load average {m['load_average_1_5_15min'][0]} at the end, "
        f"Python {m['python']}; "
        + ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v) + ".",
        "",
        "Wall time of the fit call only (best of the repeats; every tool first ran once on a "
        "tiny problem, so JIT compilation is excluded); peak memory = RSS high-water mark "
        "during the fit minus RSS before it. Ratio = peer time / survscan time, shown only "
        f"when the coefficients agree with survscan's to {COEF_ATOL:g} (max abs) or the "
        f"penalised objective to {OBJ_RTOL:g} (relative).",
        "",
        "| tool | status | wall (s) | peak mem (MB) | iterations | objective | nonzero | "
        "max abs coef diff | rel obj diff | ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in record["tools"]:
        if t["status"] != "ok":
            ratio = t["reason"]
        elif t["tool"] == "survscan":
            ratio = "1 (reference)"
        elif t["agrees"]:
            ratio = f"{t['ratio']:.2f}"
        elif t["agrees"] is None:
            ratio = "no survscan reference"
        else:
            ratio = (f"not comparable: coef diff {t['max_abs_coef_diff']:.2g}, "
                     f"objective diff {t['rel_objective_diff']:.2g}")
        lines.append(
            f"| {t['tool']} | {t['status']} | {_fmt(t['wall_s'], '.3f')} | "
            f"{_fmt(t['peak_mem_mb'], '.0f')} | {_fmt(t['n_iter'], 'd')} | "
            f"{_fmt(t['objective'], '.10g')} | {_fmt(t['nonzero_coef'], 'd')} | "
            f"{_fmt(t['max_abs_coef_diff'], '.2g')} | {_fmt(t['rel_objective_diff'], '.2g')} | "
            f"{ratio} |")
    return "\n".join(lines) + "\n"


def write(record, out_dir):
    """Write <stem>.json and <stem>.md under out_dir; return their paths."""
    pr = record["problem"]
    stem = (f"cox_n{pr['n']}_p{pr['p']}_d{pr['density']}_k{pr['n_strata']}_"
            f"{pr['penalty']}_r{pr['ratio']}")
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, stem + ".json")
    md_path = os.path.join(out_dir, stem + ".md")
    with open(json_path, "w") as f:
        json.dump(record, f, indent=1)
    with open(md_path, "w") as f:
        f.write(markdown(record))
    return json_path, md_path


def save(record, text, out, name):
    """Write ``<out>/<name>.json`` (the record) and ``.md`` (``text``), print the text and
    return the record: the ending every ``python -m bench`` experiment shares."""
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{name}.json").write_text(json.dumps(record, indent=2, default=float))
    (Path(out) / f"{name}.md").write_text(text + "\n")
    print(text)
    return record


@contextlib.contextmanager
def matplotlib_charts():
    """HoloViews with its matplotlib backend, for a PNG; the previous backend is restored after,
    so the app's Bokeh plots in the same process (a test worker) do not inherit it."""
    import holoviews as hv

    previous = hv.Store.current_backend
    hv.extension("matplotlib", logo=False)
    try:
        yield hv
    finally:
        hv.Store.set_current_backend(previous)
