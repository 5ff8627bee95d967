"""Bayesian page: the horseshoe probit posterior (engine.sample) of a binary outcome, run in a
worker thread with live progress (iteration, ETA) and Cancel; the results below it
(bayes_results.py)."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, notify, text_options
from .results import BayesResults
from .state import BREAST, LOADED, BayesState

SOURCES = {"Breast cancer (bundled)": BREAST, "Loaded data (Data tab)": LOADED}


class BayesView(Viewer):
    """Settings, Run/Cancel with progress, and the results of the last run."""

    state = param.ClassSelector(class_=BayesState)

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
        self.status = markdown("No run yet.", sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [self.run_button],
                                cancelling="Cancelling after the current iteration ...")
        self.results = BayesResults(state=st)
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
    async def _on_run(self, event=None) -> None:
        await self.run_sampler()

    async def run_sampler(self) -> None:
        """Validate, then sample in a new thread once a job slot is free; poll its progress."""
        if self.runner.running:
            return
        try:
            job = self.state.job()
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self.runner.refuse(f"Cannot sample: {exc}")
            return
        for message in job.warnings:
            notify("warning", message, duration=0)

        def keep(run, p) -> str:
            self.state.run = run
            for message in run.warnings:
                notify("warning", message, duration=0)
            if run.mle is None:  # separation or too few rows: the posterior is there, the MLE not
                notify("warning", f"No probit MLE: {run.mle_note}", duration=0)
            return f"Done: {run.posterior.n_draws:,} draws in {p.elapsed:.2f} s."

        await self.runner.run(
            job.run, describe, notice="Sampling", done=keep, thread="survscan-bayes",
            cancelled=lambda p: (f"Sampling cancelled after {p.done:,} of {p.total:,} "
                                 f"iterations, {p.elapsed:.1f} s; earlier results stay."))

    def __panel__(self):
        return pn.Column(
            "## Bayesian sparse regression (horseshoe probit, Gibbs sampler)",
            self.source, self.outcome, self.predictors,
            pn.Row(*self.settings[:4]), pn.Row(*self.settings[4:]),
            pn.Row(self.run_button, self.runner.cancel_button, self.runner.progress),
            self.status,
            self.results,
            sizing_mode="stretch_width",
        )


def describe(p) -> str:
    """The sampler's progress: iterations of all chains, elapsed time and ETA."""
    if not p.total or p.done >= p.total:
        step = "starting" if not p.total else "computing R-hat and ESS (ArviZ)"
        return f"Sampling … {step}, elapsed {p.elapsed:.1f} s"
    return (f"Sampling … iteration {p.done:,} of {p.total:,}, elapsed {p.elapsed:.1f} s, "
            f"ETA {p.eta()}")
