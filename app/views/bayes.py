"""Bayesian page: the horseshoe probit posterior (engine.sample) of a binary outcome, run in a
worker thread with live progress (iteration, ETA) and Cancel; intervals, traces,
autocorrelation, shrinkage, the probit MLE beside it, R-hat/ESS, and exports."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import panel as pn
import param
from bokeh.resources import INLINE
from panel.viewable import Viewer

import engine

from ..bayes_state import BREAST, LOADED, BayesState
from ..job_slots import SLOTS
from ..loading import DataLoadError
from . import bayes_plots as plots
from ._common import in_thread, markdown, notify, show, table, text_options

SOURCES = {"Breast cancer (bundled)": BREAST, "Loaded data (Data tab)": LOADED}


class BayesView(Viewer):
    """Settings, Run/Cancel with progress, and the results of the last run."""

    state = param.ClassSelector(class_=BayesState)
    running = param.Boolean(default=False)
    last_outcome = param.String(default="", doc="done | cancelled | failed (for tests)")

    def __init__(self, **params):
        super().__init__(**params)
        st = self.state
        self.source = pn.widgets.RadioButtonGroup(options=SOURCES, value=st.source)
        self.source.param.watch(lambda e: setattr(st, "source", e.new), "value")
        self.outcome = markdown(sizing_mode="stretch_width")
        self.predictors = pn.widgets.MultiChoice(label="Predictors", sizing_mode="stretch_width")
        self.predictors.param.watch(lambda e: setattr(st, "predictors", list(e.new)), "value")
        self.settings = [pn.widgets.Select.from_param(st.param.model, name="Model", width=170),
                         *[pn.widgets.IntInput.from_param(getattr(st.param, k), name=label,
                                                          width=110)
                           for k, label in (("chains", "Chains"), ("draws", "Draws per chain"),
                                            ("burn_in", "Burn-in"), ("thin", "Thin"),
                                            ("seed", "Seed"))],
                         pn.widgets.Select.from_param(st.param.backend, name="Backend",
                                                      width=110),
                         pn.widgets.Checkbox.from_param(st.param.standardize,
                                                        name="Standardise predictors")]
        self.run_button = pn.widgets.Button(label="Run sampler", color="primary",
                                            width=140)
        self.run_button.on_click(self._on_run)
        self.cancel_button = pn.widgets.Button(label="Cancel", color="danger", width=120,
                                               disabled=True)
        self.cancel_button.on_click(self._on_cancel)
        self.progress = pn.indicators.Progress(value=0, max=100, width=360, visible=False)
        self.status = markdown("No run yet.", sizing_mode="stretch_width")
        self.headline = markdown(sizing_mode="stretch_width")
        self.per_sd = pn.widgets.Checkbox.from_param(st.param.per_sd,
                                                     name="Coefficients per SD of the covariate")
        self.chosen = pn.widgets.MultiChoice(label="Traces and autocorrelation of",
                                             max_items=4, sizing_mode="stretch_width")
        self.chosen.param.watch(self._draw_chains, "value")
        self.caterpillar = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.traces = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.acf = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.shrinkage = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.compare = table(css_classes=["bayes-compare"], height=330)
        self.diagnostics = table(css_classes=["bayes-diagnostics"], height=330)
        self.downloads = self._downloads()
        self._cancel = threading.Event()
        st.param.watch(self._refresh_inputs, ["source", "predictors"])
        st.param.watch(self._draw, ["run", "per_sd"])
        st.store.param.watch(self._on_data, ["data_version", "event", "event_codes"])
        self._refresh_inputs()
        self._draw()

    # ------------------------------------------------------------------------------------
    # inputs
    def _on_data(self, *events) -> None:
        if self.state.source == LOADED:
            self.state.predictors = self.state.default_predictors()
            self._refresh_inputs()

    def _refresh_inputs(self, *events) -> None:
        st = self.state
        outcome = st.outcome()
        codes = st.event_codes()
        self.outcome.object = (
            f"**Outcome:** {outcome or '— (choose an event column in the Data tab)'}"
            + (f" (1 = codes {', '.join(map(str, codes))})" if codes else " (0/1)")
            + f" · **data:** {st.data_source().get('label', 'none')}")
        self.predictors.param.update(options=text_options(st.predictor_options()),
                                     value=list(st.predictors))

    # ------------------------------------------------------------------------------------
    # running
    def _on_cancel(self, event=None) -> None:
        self._cancel.set()
        self.status.object = "Cancelling after the current iteration ..."

    async def _on_run(self, event=None) -> None:
        await self.run_sampler()

    async def run_sampler(self) -> None:
        """Validate, then sample in a new thread once a job slot is free; poll its progress."""
        if self.running:
            return
        try:
            job = self.state.job()
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self.status.object = f"Cannot sample: {exc}"
            self.last_outcome = "failed"
            notify("error", f"Cannot sample: {exc}", duration=0)
            return
        for message in job.warnings:
            notify("warning", message, duration=0)
        cancel = self._cancel = threading.Event()
        done = [0, 1]
        place = [0]
        self.running = True
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.progress.param.update(value=0, max=100, visible=True)

        def queued(cancel, progress):
            with SLOTS.slot(cancel, lambda k: place.__setitem__(0, k)):
                return job.run(cancel, progress)

        t0 = time.monotonic()
        task = asyncio.ensure_future(in_thread(
            queued, cancel, lambda k, total: done.__setitem__(slice(None), [k, total]),
            name="survscan-bayes"))
        while not task.done():
            if not cancel.is_set():
                self._describe(place[0], done, time.monotonic() - t0)
            await asyncio.wait([task], timeout=0.25)
        elapsed = time.monotonic() - t0
        try:
            run = task.result()
        except engine.Cancelled:
            self._finish("cancelled", f"Sampling cancelled after {done[0]:,} of {done[1]:,} "
                                      f"iterations, {elapsed:.1f} s; earlier results stay.")
            notify("warning", "Sampling cancelled", duration=4000)
            return
        except Exception as exc:  # a failed run is a message; earlier results stay
            self._finish("failed", f"Sampling failed: {exc}")
            notify("error", f"Sampling failed: {exc}", duration=0)
            return
        self.state.run = run
        self._finish("done", f"Done: {run.posterior.n_draws:,} draws in {elapsed:.2f} s.")
        for message in run.warnings:
            notify("warning", message, duration=0)
        notify("success", f"Sampling done in {elapsed:.2f} s", duration=3000)

    def _describe(self, place: int, done: list, elapsed: float) -> None:
        if place:
            self.status.object = (f"The server is busy: waiting, number {place} in the queue "
                                  f"({elapsed:.1f} s)")
            return
        k, total = done
        eta = f"{elapsed * (total - k) / k:.1f} s" if k else "—"
        self.progress.param.update(value=int(100 * k / max(total, 1)))
        self.status.object = (f"Sampling … iteration {k:,} of {total:,}, elapsed "
                              f"{elapsed:.1f} s, ETA {eta}")

    def _finish(self, outcome: str, message: str) -> None:
        self.status.object = message
        self.progress.visible = False
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.running = False
        self.last_outcome = outcome

    # ------------------------------------------------------------------------------------
    # results
    def _draw(self, *events) -> None:
        st, run = self.state, self.state.run
        for widget in self.downloads:
            widget.disabled = run is None
        if run is None:
            self.headline.object = "Run the sampler to see the posterior."
            return
        post, s = run.posterior, run.spec["sample"]
        mle = ("the probit MLE is beside it" if run.mle is not None
               else f"no probit MLE: {run.mle_note}")
        self.headline.object = (
            f"**{s['model']}** on {run.spec['data']['label']}: outcome {run.spec['outcome']}, "
            f"{len(run.cohort.names)} predictor(s), {run.cohort.n:,} rows; {s['chains']} "
            f"chain(s) × {s['draws']:,} draws (burn-in {s['burn_in']:,}, thin {s['thin']}, "
            f"seed {s['seed']}) in {post.timings['sampling']:.2f} s of sampling; median ESS "
            f"per second {post.ess_per_second:,.1f}; {mle}.")
        scale = st.scale_label()
        self.caterpillar.object = plots.caterpillar(st.intervals(run), scale)
        self.shrinkage.object = plots.shrinkage(st.shrinkage(run), scale)
        show(self.compare, st.comparison(run), 4)
        show(self.diagnostics, st.diagnostics(run), 3)
        options = st.coefficient_options(run)
        keep = [n for n in self.chosen.value if n in options] or options[:2]
        self.chosen.param.update(options=text_options(options), value=keep)
        self._draw_chains()

    def _draw_chains(self, *events) -> None:
        run = self.state.run
        names = list(self.chosen.value)
        if run is None or not names:
            self.traces.object = self.acf.object = None
            return
        self.traces.object = plots.traces(self.state.traces(run, names), self.state.scale_label())
        self.acf.object = plots.autocorrelation(self.state.autocorrelations(run, names))

    # ------------------------------------------------------------------------------------
    # exports
    def _downloads(self) -> list:
        st = self.state

        def text(make):
            return lambda: io.StringIO(make(st.run))

        return [
            pn.widgets.FileDownload(callback=text(st.summary_csv), filename="bayes_summary.csv",
                                    label="Summary CSV", width=170),
            pn.widgets.FileDownload(callback=lambda: io.BytesIO(st.netcdf(st.run)),
                                    filename="bayes_draws.nc", label="Draws NetCDF", width=170),
            pn.widgets.FileDownload(callback=self._plots_html, filename="bayes_plots.html",
                                    label="Plots HTML", width=170),
            pn.widgets.FileDownload(callback=text(st.spec_json), filename="bayes_spec.json",
                                    label="JSON spec", width=170),
            pn.widgets.FileDownload(callback=text(lambda run: st.python_script(run.spec)),
                                    filename="bayes_run.py", label="Python script", width=170),
        ]

    def plots_layout(self) -> pn.Column:
        return pn.Column(markdown(self.headline.object), self.caterpillar.object,
                         self.shrinkage.object, self.traces.object, self.acf.object)

    def _plots_html(self) -> io.StringIO:
        out = io.StringIO()
        self.plots_layout().save(out, resources=INLINE, title="survscan Bayesian run")
        out.seek(0)
        return out

    def __panel__(self):
        return pn.Column(
            "## Bayesian sparse regression (horseshoe probit, Gibbs sampler)",
            self.source, self.outcome, self.predictors,
            pn.Row(*self.settings[:4]), pn.Row(*self.settings[4:]),
            pn.Row(self.run_button, self.cancel_button, self.progress),
            self.status,
            "### Results", self.headline, self.per_sd,
            self.caterpillar,
            "### Posterior beside the probit MLE", self.compare,
            self.shrinkage,
            "### Chains", self.chosen, self.traces, self.acf,
            "### Convergence: R-hat, effective sample size (ESS), ESS per second",
            self.diagnostics,
            "### Export", pn.Row(*self.downloads),
            sizing_mode="stretch_width",
        )
