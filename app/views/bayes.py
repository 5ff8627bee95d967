"""Bayesian page: the horseshoe probit posterior (engine.sample) of a binary outcome, run in a
worker thread with live progress (iteration, ETA) and Cancel; the results below it
(bayes_results.py)."""

from __future__ import annotations

import asyncio
import threading
import time

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..bayes_state import BREAST, LOADED, BayesState
from ..job_slots import SLOTS
from ..loading import DataLoadError
from ._common import in_thread, markdown, notify, text_options
from .bayes_results import BayesResults

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
        self.results = BayesResults(state=st)
        self._cancel = threading.Event()
        st.param.watch(self._refresh_inputs, ["source", "predictors"])
        st.store.param.watch(self._on_data, ["data_version", "event", "event_codes"])
        self._refresh_inputs()

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
        # iterations done, their total, and the time and count of the first report: the ETA
        # extrapolates the sampling rate since then
        done = [0, 0, None, 0]

        def progress(k, total):
            done[:2] = [k, total]
            if done[2] is None:
                done[2:] = [time.monotonic(), k]

        place = [0]
        self.running = True
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.progress.param.update(value=0, max=100, visible=True)

        def queued(cancel, progress):
            with SLOTS.slot(cancel, lambda k: place.__setitem__(0, k)):
                return job.run(cancel, progress)

        t0 = time.monotonic()
        task = asyncio.ensure_future(in_thread(queued, cancel, progress, name="survscan-bayes"))
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
        if run.mle is None:   # separation or too few rows: the posterior is there, the MLE not
            notify("warning", f"No probit MLE: {run.mle_note}", duration=0)
        notify("success", f"Sampling done in {elapsed:.2f} s", duration=3000)

    def _describe(self, place: int, done: list, elapsed: float) -> None:
        if place:
            self.status.object = (f"The server is busy: waiting, number {place} in the queue "
                                  f"({elapsed:.1f} s)")
            return
        k, total, first_time, first_k = done
        if not total or k >= total:
            step = "starting" if not total else "computing R-hat and ESS (ArviZ)"
            self.status.object = f"Sampling … {step}, elapsed {elapsed:.1f} s"
            return
        rate = (k - first_k) / max(time.monotonic() - first_time, 1e-9)
        eta = f"{(total - k) / rate:.1f} s" if rate > 0 else "—"
        self.progress.param.update(value=int(100 * k / max(total, 1)))
        self.status.object = (f"Sampling … iteration {k:,} of {total:,}, elapsed "
                              f"{elapsed:.1f} s, ETA {eta}")

    def _finish(self, outcome: str, message: str) -> None:
        self.status.object = message
        self.progress.visible = False
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.running = False
        self.last_outcome = outcome

    def __panel__(self):
        return pn.Column(
            "## Bayesian sparse regression (horseshoe probit, Gibbs sampler)",
            self.source, self.outcome, self.predictors,
            pn.Row(*self.settings[:4]), pn.Row(*self.settings[4:]),
            pn.Row(self.run_button, self.cancel_button, self.progress),
            self.status,
            self.results,
            sizing_mode="stretch_width",
        )
