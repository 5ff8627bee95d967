"""Timing view: the same model on each backend and solver, on lifelines, and a naive O(N^2)
risk-set evaluation, live on the current data; and a scaling chart over N.

The teaching story: a naive Cox log-likelihood sums exp(eta) over every risk set, O(N^2); the
engine sorts by time once and gets every risk-set sum from one scan (prefix sum), O(N).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine
from engine import lifelines_fit, naive_loglik

from ..data.loading import DataLoadError
from ..data.store import Store
from ..shell.caught_warnings import collected
from ..shell.choices import SOLVERS, available_backends
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, show, table
from .plots import scaling_plot, timing_bars

LIFELINES_MAX_ROWS = 20_000
LIFELINES_MAX_COLS = 60
NAIVE_MAX_ROWS = 3_000  # N x N float matrix: 72 MB at 3,000 rows
SCALING_NS = (250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)


def best_of(fn, repeats: int = 3) -> float:
    """Shortest wall time of ``repeats`` calls (a busy machine only ever adds time)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_timings(make_cohort, options: dict, cancel: threading.Event, report) -> pd.DataFrame:
    """Time every backend x solver, lifelines and the naive evaluation on one cohort."""
    rows = []
    cohort = make_cohort()
    n, p = cohort.n, cohort.p

    def add(method, seconds, note=""):
        rows.append({"method": method, "seconds": seconds, "note": note})
        report(f"{method}: {'%.3f s' % seconds if seconds is not None else note}")

    for backend in available_backends():
        if backend == "auto" and "gpu" not in available_backends():
            continue  # auto is the CPU here: timed as cpu
        for solver in SOLVERS:
            if cancel.is_set():
                raise engine.Cancelled("timing cancelled")
            label = f"engine {backend} / {solver}"
            if solver == "newton" and options["penalty"] is not None and options["penalty"].l1 > 0:
                add(label, None, "skipped: Newton needs a smooth penalty (L1 is not)")
                continue
            with collected():
                res = engine.fit(cohort, **{**options, "backend": backend, "solver": solver},
                                 cancel=cancel)
            add(label, res.timings["total"], f"{res.n_iter} iterations"
                + ("" if res.converged else ", not converged"))
    if "gpu" not in available_backends():
        add("engine gpu", None, "skipped: no GPU backend / CUDA device here")
    if options.get("model", "cox") != "cox":
        other = {"fine_gray": "Fine-Gray", "poisson": "Poisson"}[options["model"]]
        add("lifelines CoxPHFitter", None, f"skipped: lifelines has no {other} regression")
    elif n <= LIFELINES_MAX_ROWS and p <= LIFELINES_MAX_COLS and not options.get("cut_points"):
        t0 = time.perf_counter()
        try:
            with collected() as caught:
                lifelines_fit(cohort)
            add("lifelines CoxPHFitter", time.perf_counter() - t0,
                "lifelines uses Efron ties, unpenalised"
                + (f"; it warned: {first_line(caught[0])}" if caught else ""))
        except Exception as exc:
            add("lifelines CoxPHFitter", None, f"failed: {failure(exc)}")
    else:
        why = "cut points" if options.get("cut_points") else "too large"
        add("lifelines CoxPHFitter", None, f"skipped: {why} (N={n:,}, P={p:,})")
    beta = np.zeros(p)
    add("engine scan: one log-likelihood (Breslow)",
        best_of(lambda: engine.loglik(cohort, beta, ties="breslow")),
        "sort once (N log N), then one O(N) scan; best of 3")
    if n <= NAIVE_MAX_ROWS:
        add("naive O(N²): one log-likelihood (pure NumPy)",
            best_of(lambda: naive_loglik(cohort.time, cohort.event, cohort.X, beta)),
            "teaching: every risk set summed separately; best of 3")
    else:
        add("naive O(N²): one log-likelihood (pure NumPy)", None,
            f"skipped: too large (N={n:,} > {NAIVE_MAX_ROWS:,})")
    return pd.DataFrame(rows)


def run_scaling(subsample, max_n: int, options: dict, cancel: threading.Event,
                report) -> pd.DataFrame:
    """Seconds over N for the engine fit, one engine scan, lifelines and naive O(N^2)."""
    rows = []
    ns = [n for n in SCALING_NS if n < max_n] + [max_n]
    for n in ns:
        if cancel.is_set():
            raise engine.Cancelled("timing cancelled")
        cohort = subsample(n)()
        report(f"scaling: N = {cohort.n:,}")
        with collected():
            res = engine.fit(cohort, **{**options, "solver": "auto"})
        rows.append({"N": cohort.n, "method": "engine fit (auto)", "seconds": res.timings["total"]})
        beta = np.zeros(cohort.p)
        rows.append({"N": cohort.n, "method": "engine scan (1 log-lik)",
                     "seconds": best_of(lambda: engine.loglik(cohort, beta))})
        if cohort.n <= NAIVE_MAX_ROWS:
            rows.append({"N": cohort.n, "method": "naive O(N²) (1 log-lik)",
                         "seconds": best_of(lambda: naive_loglik(cohort.time, cohort.event,
                                                                 cohort.X, beta))})
        if (cohort.n <= 5_000 and cohort.p <= LIFELINES_MAX_COLS and not options.get("cut_points")
                and options.get("model", "cox") == "cox"):
            t0 = time.perf_counter()
            try:
                with collected():
                    lifelines_fit(cohort)
                rows.append({"N": cohort.n, "method": "lifelines fit",
                             "seconds": time.perf_counter() - t0})
            except Exception as exc:  # kept as a row without seconds: the page names it
                rows.append({"N": cohort.n, "method": "lifelines fit", "seconds": np.nan,
                             "note": f"failed: {failure(exc)}"})
    return pd.DataFrame(rows)


def first_line(message, width: int = 120) -> str:
    """The message's first line, cut at a word within ``width`` characters."""
    line = (str(message).strip().splitlines() or [""])[0]
    return line if len(line) <= width else line[:width].rsplit(" ", 1)[0] + " …"


def failure(exc: Exception) -> str:
    """'ConvergenceError: Convergence halted ...': the reason a peer fit failed, in one line."""
    return f"{type(exc).__name__}: {first_line(exc)}"


def scaling_failures(scaling: pd.DataFrame) -> str:
    """The scaling points that failed, one line each (empty when none did)."""
    if "note" not in scaling:
        return ""
    failed = scaling.dropna(subset=["note"])
    return "\n".join(f"- **{r.method}** at N = {r.N:,}: {r.note}" for r in failed.itertuples())


class TimingView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.max_rows = pn.widgets.IntInput(label="Rows used (a random subsample when fewer)",
                                            value=10_000, start=100, step=1000, width=300)
        self.scaling = pn.widgets.Checkbox(label="Scaling chart over N", value=True)
        self.run_button = pn.widgets.Button(label="Run timings", color="primary")
        self.run_button.on_click(self._on_run)
        self.status = markdown("Times the current model (Design tab) on the current data.")
        self.runner = JobRunner(self.status, [self.run_button], cancel_label="Cancel timings",
                                cancelling="Cancelling after the current timing ...")
        self.table = table(height=300)
        self.bars = pn.pane.HoloViews(sizing_mode="fixed")
        self.scale = pn.pane.HoloViews(sizing_mode="fixed")
        self.scale_notes = markdown(sizing_mode="stretch_width", css_classes=["scaling-notes"])
        self.results = pd.DataFrame()
        self.scaling_results = pd.DataFrame()

    async def _on_run(self, event=None) -> None:
        await self.run()

    async def run(self) -> None:
        """Time the current model in a new thread once a job slot is free; show the table and
        the charts."""
        s = self.store
        if self.runner.running:
            return
        try:
            max_n = int(self.max_rows.value or 10_000)
            make = s.subsample_factory(max_n)
            subsample = ((lambda n: s.subsample_factory(n, seed=1, replace=True))
                         if self.scaling.value else None)
            scaling_n = max_n if not s.id else min(max_n, s.n_rows)
            options = {**s.fit_options()}
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self.runner.refuse(f"Cannot time: {exc}")
            return

        def work(cancel, progress):
            progress.say("starting")
            table_ = run_timings(make, options, cancel, progress.say)
            scaling = (run_scaling(subsample, scaling_n, options, cancel, progress.say)
                       if subsample else pd.DataFrame())
            return table_, scaling

        def keep(result, p) -> str:
            timings, scaling = result
            timed = scaling.dropna(subset=["seconds"]) if len(scaling) else scaling
            failed = scaling_failures(scaling)
            bars, chart = timing_bars(timings), scaling_plot(timed) if len(timed) else None
            self.results, self.scaling_results = timings, scaling
            show(self.table, timings, 4)
            self.bars.object, self.scale.object = bars, chart
            self.scale_notes.object = ("Not on the scaling chart:\n\n" + failed) if failed else ""
            beyond = (f" Scaling points beyond the data's {s.n_rows:,} rows are rows drawn "
                      "with replacement." if subsample and scaling_n > s.n_rows else "")
            return (f"Timed on {s.source.get('label')} (up to {max_n:,} rows) in "
                    f"{p.elapsed:.1f} s." + beyond)

        await self.runner.run(work, lambda p: f"Timing … {p.note} ({p.elapsed:.1f} s)",
                              notice="Timing", done=keep, counted=False,
                              thread="survscan-timing",
                              cancelled=lambda p: "Timings cancelled.")

    def __panel__(self):
        return pn.Column(
            "## Timing",
            markdown(
                "The same model on each backend and solver of the engine, on lifelines where "
                "the data are small enough, and one log-likelihood evaluated naively "
                "(**O(N²)**: every risk set summed separately, pure NumPy, teaching only) "
                "versus the engine's **scan** (one prefix sum over rows sorted by time)."),
            pn.Row(self.max_rows, self.scaling), pn.Row(self.run_button, self.runner.cancel_button),
            self.runner.progress, self.status, self.table, self.bars, self.scale, self.scale_notes,
            sizing_mode="stretch_width",
        )
