"""Fit view: run engine.fit in a worker thread with progress, elapsed time and Cancel; keep fits.

"Cross-validate penalty" runs engine.cross_validate (L1/L2) the same way; Results draws its
curve, and its refit at the chosen lambda is kept as a fit.
"""

from __future__ import annotations

import asyncio
import threading
import time

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..job_slots import SLOTS
from ..jobs import comparison
from ..loading import DataLoadError
from ..store import Store
from ._common import in_thread, markdown, notify, show, table
from .path_view import PathView, penalty_words


class FitView(Viewer):
    """The Fit and Cancel buttons, a progress indicator, and the list of kept fits."""

    store = param.ClassSelector(class_=Store)
    running = param.Boolean(default=False)
    last_outcome = param.String(default="", doc="done | cancelled | failed (for tests)")

    def __init__(self, **params):
        super().__init__(**params)
        self.name_input = pn.widgets.TextInput(label="Fit name", placeholder="fit 1", width=220)
        self.fit_button = pn.widgets.Button(label="Fit", color="primary", width=120)
        self.fit_button.on_click(self._on_fit)
        self.cancel_button = pn.widgets.Button(label="Cancel", color="danger", width=120,
                                               disabled=True)
        self.cancel_button.on_click(self._on_cancel)
        self.progress = pn.indicators.Progress(active=False, value=0, max=100, width=360,
                                               bar_color="primary", visible=False)
        self.status = markdown("No fit yet.", sizing_mode="stretch_width")
        self.summary = markdown(sizing_mode="stretch_width")
        self.fits_table = table(height=220)
        self.remove_select = pn.widgets.Select(label="Kept fit", width=220)
        self.remove_button = pn.widgets.Button(label="Remove fit", width=120)
        self.remove_button.on_click(self._remove)
        self.cv_folds = pn.widgets.IntInput.from_param(self.store.param.cv_folds, name="CV folds",
                                                       width=110)
        self.cv_grid = pn.widgets.IntInput.from_param(self.store.param.cv_grid,
                                                      name="Lambda grid points", width=140)
        self.cv_button = pn.widgets.Button(label="Cross-validate penalty", width=200)
        self.cv_button.on_click(self._on_cv)
        self.path_button = pn.widgets.Button(label="Draw the path", width=160)
        self.path_button.on_click(self._on_path)
        self.path_view = PathView(store=self.store)
        self._cancel = threading.Event()
        self.store.param.watch(self._refresh_fits, ["fits"])
        self.store.param.watch(self._refresh_summary, ["data_version", "time", "event",
                                                       "covariates", "strata", "cut_points",
                                                       "ties", "penalty", "strength", "solver",
                                                       "strength_fraction", "strength_as",
                                                       "lambda_max", "forms", "interactions",
                                                       "backend", "start"])
        self._refresh_fits()
        self._refresh_summary()

    def _refresh_summary(self, *events) -> None:
        s = self.store
        opts = s.spec()["options"]
        cuts = "; ".join(f"{k} at {', '.join(f'{c:g}' for c in v)}" for k, v in s.cut_points.items())
        penalty = penalty_words(s)
        self.summary.object = (
            f"**Data:** {s.source.get('label', 'none')} ({s.n_rows:,} rows) · "
            f"**time** {s.time}{' (start ' + s.start + ')' if s.start else ''} · "
            f"**event** {s.event} · **{len(s.covariates)} covariate(s)**"
            + (f" as `{s.model_formula()}`" if s.model_formula() else "") + " · "
            f"**strata** {', '.join(s.strata) or 'none'} · **cut points** {cuts or 'none'}  \n"
            f"**Model** {opts['model']}, ties {opts['ties']}, penalty {penalty}, "
            f"solver {opts['solver']}, backend {opts['backend']}")

    def _refresh_fits(self, *events) -> None:
        df = comparison(self.store.fits)
        show(self.fits_table, df, 4)
        names = [f.name for f in self.store.fits]
        self.remove_select.options = names
        self.remove_select.value = names[-1] if names else None
        self.name_input.placeholder = self.store.next_fit_name()

    def _remove(self, event=None) -> None:
        if self.remove_select.value:
            self.store.remove_fit(self.remove_select.value)

    def _on_cancel(self, event=None) -> None:
        self._cancel.set()
        self.status.object = "Cancelling after the current iteration ..."

    async def _on_fit(self, event=None) -> None:
        await self.run_fit()

    async def _on_cv(self, event=None) -> None:
        await self.run_cv()

    async def _on_path(self, event=None) -> None:
        await self.run_path()

    def _new_job(self, make_job, failed: str, cannot: str):
        """The job for the typed name (or None, with the reason shown): a kept name is refused,
        and a design the engine rejects is a message, never a traceback."""
        if self.running:
            return None
        name = self.name_input.value.strip() or None
        if name and any(f.name == name for f in self.store.fits):
            notify("error", f"A fit named {name!r} is already kept; choose another name.")
            return None
        try:
            return make_job(name)
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self._finish("failed", f"{failed}: {exc}")
            notify("error", f"{cannot}: {exc}", duration=0)
            return None

    async def _in_worker(self, run, progress, thread: str, describe):
        """Run ``run(cancel, progress)`` in a new thread once a server-wide job slot is free;
        until it ends, refresh the status line (the place in the queue, then
        ``describe(elapsed)``) every 0.25 s.  Returns (finished task, elapsed)."""
        cancel = threading.Event()
        self._cancel = cancel
        self.running = True
        self.fit_button.disabled = self.cv_button.disabled = self.path_button.disabled = True
        self.cancel_button.disabled = False
        t0 = time.monotonic()
        place = [0]  # in the server's queue; 0 once running

        def queued(cancel, progress):
            with SLOTS.slot(cancel, lambda k: place.__setitem__(0, k)):
                return run(cancel, progress)

        task = asyncio.ensure_future(in_thread(queued, cancel, progress, name=thread))
        while not task.done():
            if place[0] and not cancel.is_set():
                self.status.object = (f"The server is busy: waiting, number {place[0]} in the "
                                      f"queue ({time.monotonic() - t0:.1f} s)")
            elif not cancel.is_set():
                describe(time.monotonic() - t0)
            await asyncio.wait([task], timeout=0.25)
        return task, time.monotonic() - t0

    async def run_cv(self) -> None:
        """engine.cross_validate in a new thread with fold progress and Cancel; keep the refit."""
        job = self._new_job(self.store.cv_job, "Cross-validation failed", "Cannot cross-validate")
        if job is None:
            return
        key = self.store.penalty_key()
        folds, points = job.options["folds"], job.options["grid"]
        done = [0, folds * points]
        self.progress.param.update(active=True, value=0, max=done[1], visible=True)

        def progress(k, total):
            done[:] = [k, total]

        def where() -> str:
            step = min(done[0], done[1] - 1)
            return f"fold {step // points + 1} of {folds}, lambda {step % points + 1} of {points}"

        def describe(elapsed):
            self.progress.param.update(max=max(done[1], 1), value=min(done[0], done[1]))
            self.status.object = (f"Cross-validating **{job.name}** … {where()} "
                                  f"({done[0]} of {done[1]} fits done), elapsed {elapsed:.1f} s")

        task, elapsed = await self._in_worker(job.run, progress, f"survscan-cv-{job.name}",
                                              describe)
        try:
            run, kept = task.result()
        except engine.Cancelled:
            self._finish("cancelled", f"**{job.name}** cross-validation cancelled at "
                                      f"{where()}, {elapsed:.1f} s.")
            notify("warning", f"{job.name} cancelled", duration=4000)
            return
        except Exception as exc:  # a failed run is a message; data and earlier fits stay
            self._finish("failed", f"Cross-validation failed ({job.name}): {exc}")
            notify("error", f"{job.name} failed: {exc}", duration=0)
            return
        self.store.cv = run
        self.store.note_lambda_max(key, run.result.lambda_max)
        self.store.strength_fraction = run.chosen / run.result.lambda_max
        self.store.strength = run.chosen     # the chosen lambda, exactly, for the next fit
        self.store.keep(kept)
        self._finish("done", f"**{kept.name}**: cross-validated {run.penalty} over "
                             f"{job.options['folds']} folds in {elapsed:.2f} s; chosen lambda "
                             f"{run.chosen:.4g} (refit kept; the curve is in Results).")
        for message in kept.warnings:
            notify("warning", message, duration=0)
        notify("success", f"{kept.name} done in {elapsed:.2f} s", duration=3000)

    async def run_fit(self) -> None:
        """Snapshot the store, fit in a new thread, poll its progress; keep the result."""
        job = self._new_job(self.store.fit_job, "Fit failed", "Cannot fit")
        if job is None:
            return
        iterations = [0]
        self.progress.param.update(active=True, value=-1, visible=True)

        def describe(elapsed):
            self.status.object = (f"Fitting **{job.name}** … iteration {iterations[0]}, "
                                  f"elapsed {elapsed:.1f} s")

        task, elapsed = await self._in_worker(job.run,
                                              lambda done, total: iterations.__setitem__(0, done),
                                              f"survscan-fit-{job.name}", describe)
        try:
            kept = task.result()
        except engine.Cancelled:
            self._finish("cancelled", f"**{job.name}** cancelled after {iterations[0]} "
                                      f"iteration(s), {elapsed:.1f} s.")
            notify("warning", f"{job.name} cancelled", duration=4000)
        except Exception as exc:  # a failed fit is a message; data and earlier fits stay
            message = self.store.explain(str(exc))
            self._finish("failed", f"Fit failed ({job.name}): {message}")
            notify("error", f"{job.name} failed: {message}", duration=0)
        else:
            res = kept.result
            state = "converged" if res.converged else "did NOT converge"
            if job.scale is not None:
                self.store.note_lambda_max(job.scale["key"], kept.spec["options"]["lambda_max"])
            self.store.keep(kept)
            self._finish("done", f"**{kept.name}**: {state} after {res.n_iter} iterations in "
                                 f"{elapsed:.2f} s; log partial likelihood {res.loglik:.4f}.")
            for message in kept.warnings:
                notify("warning", message, duration=0)
            notify("success", f"{kept.name} done in {elapsed:.2f} s", duration=3000)

    async def run_path(self) -> None:
        """engine.path in a new thread with progress and Cancel; Fit shows its plot."""
        job = self._new_job(lambda name: self.store.path_job(), "The path failed",
                            "Cannot draw the path")
        if job is None:
            return
        done = [0, job.options["grid"]]
        self.progress.param.update(active=True, value=0, max=done[1], visible=True)

        def describe(elapsed):
            self.progress.param.update(max=max(done[1], 1), value=min(done[0], done[1]))
            self.status.object = (f"Computing the **{job.name}** … fit {done[0]} of {done[1]}, "
                                  f"elapsed {elapsed:.1f} s")

        task, elapsed = await self._in_worker(
            job.run, lambda k, total: done.__setitem__(slice(None), [k, total]),
            "survscan-path", describe)
        try:
            run = task.result()
        except engine.Cancelled:
            self._finish("cancelled", f"The {job.name} was cancelled after {done[0]} fit(s).")
            return
        except Exception as exc:  # a failed path is a message; data and fits stay
            self._finish("failed", f"The path failed: {exc}")
            notify("error", f"The path failed: {exc}", duration=0)
            return
        self.store.note_lambda_max(run.key, run.result.lambda_max)
        self.store.path = run
        self._finish("done", f"The {job.name}: {len(run.result.lambdas)} fits in "
                             f"{elapsed:.2f} s; lambda_max {run.result.lambda_max:.4g}.")

    def _finish(self, outcome: str, message: str) -> None:
        self.status.object = message
        self.progress.param.update(active=False, value=0, visible=False)
        self.fit_button.disabled = self.cv_button.disabled = self.path_button.disabled = False
        self.cancel_button.disabled = True
        self.name_input.value = ""
        self.running = False
        self.last_outcome = outcome

    def __panel__(self):
        return pn.Column(
            "## Fit",
            self.summary,
            pn.Row(self.name_input, self.fit_button, self.cancel_button),
            self.progress,
            self.status,
            "### Cross-validate the L1/L2 strength (the penalty chosen in Design)",
            pn.Row(self.cv_folds, self.cv_grid, self.cv_button, self.path_button),
            self.path_view,
            "### Kept fits (compare them in Results)",
            self.fits_table,
            pn.Row(self.remove_select, self.remove_button),
            sizing_mode="stretch_width",
        )
