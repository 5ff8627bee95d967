"""Fit view: run engine.fit in a worker thread with progress, elapsed time and Cancel; keep fits.

"Cross-validate penalty" runs engine.cross_validate (L1/L2) the same way; Results draws its
curve, and its refit at the chosen lambda is kept as a fit.
"""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError
from ..data.store import Store
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, notify, show, table
from .bootstrap import BootstrapView
from .jobs import comparison
from .path import PathView, penalty_words
from .state import Workbench


class FitView(Viewer):
    """The Fit and Cancel buttons, a progress indicator, and the list of kept fits."""

    store = param.ClassSelector(class_=Store)
    workbench = param.ClassSelector(class_=Workbench)

    def __init__(self, **params):
        super().__init__(**params)
        self.name_input = pn.widgets.TextInput(label="Fit name", placeholder="fit 1", width=220)
        self.fit_button = pn.widgets.Button(label="Fit", color="primary", width=120)
        self.fit_button.on_click(self._on_fit)
        self.status = markdown("No fit yet.", sizing_mode="stretch_width")
        self.summary = markdown(sizing_mode="stretch_width")
        self.fits_table = table(height=220)
        self.remove_select = pn.widgets.Select(label="Kept fit", width=220)
        self.remove_button = pn.widgets.Button(label="Remove fit", width=120)
        self.remove_button.on_click(self._remove)
        self.cv_folds = pn.widgets.IntInput.from_param(self.workbench.param.cv_folds,
                                                       name="CV folds", width=110)
        self.cv_grid = pn.widgets.IntInput.from_param(self.workbench.param.cv_grid,
                                                      name="Lambda grid points", width=140)
        self.cv_button = pn.widgets.Button(label="Cross-validate penalty", width=200)
        self.cv_button.on_click(self._on_cv)
        self.path_button = pn.widgets.Button(label="Draw the path", width=160)
        self.path_button.on_click(self._on_path)
        self.path_view = PathView(store=self.store, workbench=self.workbench)
        self.bootstrap_view = BootstrapView(store=self.store, workbench=self.workbench)
        self.bootstrap_view.button.on_click(self._on_bootstrap)
        self.runner = JobRunner(self.status, [self.fit_button, self.cv_button, self.path_button,
                                              self.bootstrap_view.button],
                                cancelling="Cancelling after the current iteration ...")
        # after the app's own watcher (precedence 1), which opens Results for a new fit: this
        # page has then left the browser, and the table's new rows reach no browser model
        # until the page is shown again (0.2 s of a 10^5 x 1,000 fit's click-to-result)
        self.workbench.param.watch(self._refresh_fits, ["fits"], precedence=2)
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
        df = comparison(self.workbench.fits)
        show(self.fits_table, df, 4)
        names = [f.name for f in self.workbench.fits]
        self.remove_select.options = names
        self.remove_select.value = names[-1] if names else None
        self.name_input.placeholder = self.workbench.next_fit_name()

    def _remove(self, event=None) -> None:
        if self.remove_select.value:
            self.workbench.remove_fit(self.remove_select.value)

    async def _on_fit(self, event=None) -> None:
        await self.run_fit()

    async def _on_cv(self, event=None) -> None:
        await self.run_cv()

    async def _on_path(self, event=None) -> None:
        await self.run_path()

    async def _on_bootstrap(self, event=None) -> None:
        await self.run_bootstrap()

    def _new_job(self, make_job, failed: str, cannot: str):
        """The job for the typed name (or None, with the reason shown): a kept name is refused,
        and a design the engine rejects is a message, never a traceback."""
        if self.runner.running:
            return None
        name = self.name_input.value.strip() or None
        if name and any(f.name == name for f in self.workbench.fits):
            notify("error", f"A fit named {name!r} is already kept; choose another name.")
            return None
        try:
            return make_job(name)
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self.runner.refuse(f"{failed}: {exc}", f"{cannot}: {exc}")
            self.name_input.value = ""
            return None

    async def _run(self, job, describe, **texts) -> None:
        """Run ``job`` on the page's runner (the engine's messages in the app's words); the
        name box is emptied for the next fit however it ended."""
        await self.runner.run(job.run, describe, explain=self.store.explain,
                              thread=f"survscan-{job.name}", **texts)
        self.name_input.value = ""

    async def run_cv(self) -> None:
        """engine.cross_validate in a new thread with fold progress and Cancel; keep the refit."""
        job = self._new_job(self.workbench.cv_job, "Cross-validation failed",
                            "Cannot cross-validate")
        if job is None:
            return
        key = self.store.penalty_key()
        folds, points = job.options["folds"], job.options["grid"]

        def where(p) -> str:
            step = min(p.done, (p.total or folds * points) - 1)
            return f"fold {step // points + 1} of {folds}, lambda {step % points + 1} of {points}"

        def keep(result, p) -> str:
            run, kept = result
            self.workbench.cv = run
            self.store.note_lambda_max(key, run.result.lambda_max)
            self.store.strength_fraction = run.chosen / run.result.lambda_max
            self.store.strength = run.chosen     # the chosen lambda, exactly, for the next fit
            self.workbench.keep(kept)
            for message in kept.warnings:
                notify("warning", message, duration=0)
            return (f"**{kept.name}**: cross-validated {run.penalty} over {folds} folds in "
                    f"{p.elapsed:.2f} s; chosen lambda {run.chosen:.4g} (refit kept; the curve "
                    "is in Results).")

        await self._run(
            job, lambda p: (f"Cross-validating **{job.name}** … {where(p)} ({p.done} of "
                            f"{p.total or folds * points} fits done), elapsed {p.elapsed:.1f} s"),
            notice=job.name, failed=f"Cross-validation failed ({job.name})", done=keep,
            cancelled=lambda p: (f"**{job.name}** cross-validation cancelled at {where(p)}, "
                                 f"{p.elapsed:.1f} s."))

    async def run_fit(self) -> None:
        """Snapshot the store, fit in a new thread, poll its progress; keep the result."""
        job = self._new_job(self.workbench.fit_job, "Fit failed", "Cannot fit")
        if job is None:
            return

        def keep(kept, p) -> str:
            res = kept.result
            state = "converged" if res.converged else "did NOT converge"
            if job.scale is not None:
                self.store.note_lambda_max(job.scale["key"], kept.spec["options"]["lambda_max"])
            self.workbench.keep(kept)
            for message in kept.warnings:
                notify("warning", message, duration=0)
            return (f"**{kept.name}**: {state} after {res.n_iter} iterations in "
                    f"{p.elapsed:.2f} s; log partial likelihood {res.loglik:.4f}.")

        await self._run(
            job, lambda p: (f"Fitting **{job.name}** … iteration {p.done}, elapsed "
                            f"{p.elapsed:.1f} s"),
            notice=job.name, failed=f"Fit failed ({job.name})", done=keep, counted=False,
            cancelled=lambda p: (f"**{job.name}** cancelled after {p.done} iteration(s), "
                                 f"{p.elapsed:.1f} s."))

    async def run_path(self) -> None:
        """engine.path in a new thread with progress and Cancel; Fit shows its plot."""
        job = self._new_job(lambda name: self.workbench.path_job(), "The path failed",
                            "Cannot draw the path")
        if job is None:
            return

        def keep(run, p) -> str:
            self.store.note_lambda_max(run.key, run.result.lambda_max)
            self.workbench.path = run
            return (f"The {job.name}: {len(run.result.lambdas)} fits in {p.elapsed:.2f} s; "
                    f"lambda_max {run.result.lambda_max:.4g}.")

        await self._run(
            job, lambda p: (f"Computing the **{job.name}** … fit {p.done} of "
                            f"{p.total or job.options['grid']}, elapsed {p.elapsed:.1f} s"),
            notice=f"The {job.name}", failed="The path failed", done=keep,
            cancelled=lambda p: f"The {job.name} was cancelled after {p.done} fit(s).")

    async def run_bootstrap(self) -> None:
        """engine.bootstrap in a new thread with replicate progress and Cancel."""
        job = self._new_job(lambda name: self.workbench.bootstrap_job(),
                            "The bootstrap failed", "Cannot bootstrap")
        if job is None:
            return
        total = job.options["replicates"]

        def keep(run, p) -> str:
            self.workbench.bootstrap = run
            for message in run.warnings:
                notify("warning", message, duration=0)
            return f"The {job.name}: {total} refits in {p.elapsed:.2f} s (table below)."

        await self._run(
            job, lambda p: (f"Computing the **{job.name}** … replicate {p.done} of "
                            f"{p.total or total}, elapsed {p.elapsed:.1f} s"),
            notice=f"The {job.name}", failed="The bootstrap failed", done=keep,
            cancelled=lambda p: f"The {job.name} was cancelled after {p.done} replicate(s).")

    def __panel__(self):
        return pn.Column(
            "## Fit",
            self.summary,
            pn.Row(self.name_input, self.fit_button, self.runner.cancel_button),
            self.runner.progress,
            self.status,
            "### Cross-validate the L1/L2 strength (the penalty chosen in Design)",
            pn.Row(self.cv_folds, self.cv_grid, self.cv_button, self.path_button),
            self.path_view,
            "### Bootstrap intervals (the design as it is now)",
            self.bootstrap_view,
            "### Kept fits (compare them in Results)",
            self.fits_table,
            pn.Row(self.remove_select, self.remove_button),
            sizing_mode="stretch_width",
        )
