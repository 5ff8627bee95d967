"""One adapter per tool: fit a Problem, report time, peak memory, iterations, objective, coef.

Only the fit call is timed; converting the data to the tool's input format is not. Peak memory
is the process's resident-set high-water mark during the fit minus the RSS before it
(Linux /proc: VmHWM, reset through /proc/self/clear_refs).
"""
import re
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import engine


@dataclass
class Run:
    """What one tool did on one problem."""

    tool: str
    status: str  # "ok" | "skipped" | "failed"
    reason: str = ""
    wall_s: float | None = None
    peak_mem_mb: float | None = None
    n_iter: int | None = None
    converged: bool | None = None
    objective: float | None = None
    coef: np.ndarray | None = field(default=None, repr=False)


def _vm_kb(key):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+)", f.read()).group(1))


def measure(fit):
    """Call fit() once; return (its value, wall seconds, peak extra RSS in MB or None)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _vm_kb("VmRSS")
    except OSError:
        base = None
    start = time.perf_counter()
    value = fit()
    wall = time.perf_counter() - start
    peak = None if base is None else max(_vm_kb("VmHWM") - base, 0) / 1024
    return value, wall, peak


def survscan(problem, tol=1e-9, solver="auto", **_):
    res, wall, peak = measure(lambda: engine.fit(
        problem.cohort, model="cox", ties="breslow", penalty=problem.engine_penalty(),
        backend="cpu", solver=solver, tol=tol))
    coef = res.coef.reindex(problem.names).to_numpy()
    tool = "survscan" if solver == "auto" else f"survscan-{solver}"
    return Run(tool, "ok", wall_s=wall, peak_mem_mb=peak, n_iter=int(res.n_iter),
               converged=bool(res.converged), objective=problem.objective(coef), coef=coef)


def survscan_ccd(problem, tol=1e-9, ccd_max_nnz=2e7, **_):
    """The papers' exact CCD (every coordinate an O(N) scan, every cycle)."""
    if problem.X.nnz > ccd_max_nnz:
        return Run("survscan-ccd", "skipped",
                   f"exact CCD above {ccd_max_nnz:.0e} non-zeros (P scans of N rows per cycle)")
    return survscan(problem, tol=tol, solver="ccd")


def lifelines(problem, lifelines_max_np2=2.5e7, **_):
    from lifelines import CoxPHFitter

    work = problem.n * problem.p ** 2
    if work > lifelines_max_np2:
        return Run("lifelines", "skipped",
                   f"N*P^2 = {work:.3g} > {lifelines_max_np2:.3g}: dense Newton-Raphson, "
                   "O(N P^2) per step (about 30 s at 1e4 x 50 with L1)")
    df = pd.DataFrame(problem.X.toarray(), columns=problem.names)
    df["time"], df["event"] = problem.time, problem.event
    kwargs = {}
    if problem.strata is not None:
        df["stratum"] = problem.strata
        kwargs["strata"] = ["stratum"]
    penalizer = 0.0 if problem.penalty == "none" else problem.lifelines_penalizer()
    cph = CoxPHFitter(penalizer=penalizer, l1_ratio=1.0 if problem.penalty == "l1" else 0.0)
    _, wall, peak = measure(lambda: cph.fit(df, "time", "event", **kwargs))
    coef = cph.params_.reindex(problem.names).to_numpy()
    return Run("lifelines", "ok", "Efron ties (= Breslow without tied times); smooth |b|",
               wall_s=wall, peak_mem_mb=peak, objective=problem.objective(coef), coef=coef)


def coxnet(problem, coxnet_max_bytes=6e9, peer_tol=1e-9, **_):
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.util import Surv

    if problem.n_strata > 1:
        return Run("coxnet", "skipped", "no strata in CoxnetSurvivalAnalysis")
    if problem.penalty != "l1":
        return Run("coxnet", "skipped", "benchmarked with L1 only (l1_ratio must be > 0)")
    if problem.n * problem.p * 8 > coxnet_max_bytes:
        return Run("coxnet", "skipped",
                   f"dense X needs {problem.n * problem.p * 8 / 1e9:.1f} GB "
                   f"> {coxnet_max_bytes / 1e9:.1f} GB")
    X = problem.X.toarray()
    y = Surv.from_arrays(event=problem.event.astype(bool), time=problem.time)
    model = CoxnetSurvivalAnalysis(alphas=[problem.mean_alpha()], l1_ratio=1.0, tol=peer_tol,
                                   max_iter=1_000_000)
    _, wall, peak = measure(lambda: model.fit(X, y))
    coef = model.coef_[:, 0]
    return Run("coxnet", "ok", "dense X", wall_s=wall, peak_mem_mb=peak,
               objective=problem.objective(coef), coef=coef)


def skglm(problem, peer_tol=1e-9, **_):
    try:
        from skglm.datafits import Cox
        from skglm.penalties import L1, L2
        from skglm.solvers import LBFGS, ProxNewton
    except ImportError:
        return Run("skglm", "skipped", "skglm not installed")
    if problem.n_strata > 1:
        return Run("skglm", "skipped", "no strata in skglm's Cox datafit")
    if problem.penalty == "none":
        return Run("skglm", "skipped", "benchmarked with a penalty only")
    X = problem.X.astype(np.float64)
    y = np.asfortranarray(np.column_stack([problem.time, problem.event.astype(np.float64)]))
    if problem.penalty == "l1":
        penalty = L1(problem.mean_alpha())
        solver = ProxNewton(fit_intercept=False, tol=peer_tol, max_iter=1000)
    else:
        penalty, solver = L2(problem.mean_alpha()), LBFGS(tol=peer_tol, max_iter=10_000)
    (coef, p_objs, stop_crit), wall, peak = measure(
        lambda: solver.solve(X, y, Cox(use_efron=False), penalty))
    return Run("skglm", "ok", "sparse X, Breslow", wall_s=wall, peak_mem_mb=peak,
               n_iter=len(p_objs), converged=bool(stop_crit <= solver.tol),
               objective=problem.objective(coef), coef=np.asarray(coef))


ADAPTERS = {"survscan": survscan, "survscan-ccd": survscan_ccd, "lifelines": lifelines,
            "coxnet": coxnet, "skglm": skglm}


def run_tool(tool, problem, **options):
    """Run one adapter; an exception becomes a failed Run rather than ending the benchmark."""
    try:
        return ADAPTERS[tool](problem, **options)
    except Exception as exc:  # a peer's failure is a result to report
        return Run(tool, "failed", f"{type(exc).__name__}: {exc}")
