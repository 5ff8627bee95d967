"""SCCS page: a self-controlled case series from raw case histories or eras (Suchard2013).

Load a bundled R SCCS dataset, a CSV, a simulated multi-drug set or the Eunomia CDM; choose the
exposures, risk windows (several per drug, offsets from the exposure start or 'end'), a
pre-exposure window, age groups, the penalty with cross-validation and the bootstrap; Fit SCCS
runs in a worker thread (a server-wide job slot, progress, Cancel).  Results and exports are
in sccs_results.py.  A bad choice is a notification naming the field and the fix; the loaded
data and the last results stay.
"""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, notify, text_options
from .results import SccsResults
from .sources import SccsSources
from .state import PENALTIES, SccsState


class SccsView(Viewer):
    """Source, design, options, Fit SCCS / Cancel, and the results below."""

    state = param.ClassSelector(class_=SccsState)

    def __init__(self, **params):
        params.setdefault("state", SccsState())
        super().__init__(**params)
        s = self.state
        self.sources = SccsSources(state=s)

        # --- design: raw case histories ---------------------------------------------------
        def select(label, attr):
            w = pn.widgets.Select(label=label, width=180)
            w.param.watch(lambda e: setattr(s, attr, e.new or ""), "value")
            return w

        def multi(label, attr):
            w = pn.widgets.MultiChoice(label=label, width=300)
            w.param.watch(lambda e: setattr(s, attr, list(e.new)), "value")
            return w

        def text(label, attr, placeholder="", width=260):
            w = pn.widgets.TextInput(label=label, value=getattr(s, attr),
                                     placeholder=placeholder, width=width)
            w.param.watch(lambda e: setattr(s, attr, e.new), "value")
            return w

        self.roles = {"case": select("Case id", "case"),
                      "obs_start": select("Observation start", "obs_start"),
                      "obs_end": select("Observation end", "obs_end"),
                      "event_times": select("Event day", "event_times")}
        self.exposures = multi("Exposure start columns", "exposures")
        self.exposure_ends = multi("Exposure end columns (same order; optional)",
                                   "exposure_ends")
        self.windows = text("Risk windows (days from start; 'end' = exposure end)", "windows",
                            "0..42, 43..90  or  mmr: 0..42; ns: 0..end", 380)
        self.pre_window = text("Pre-exposure window", "pre_window", "e.g. -14..-1", 180)
        self.age_cuts = text("Age group cut points (days)", "age_cuts", "e.g. 427, 488, 549")
        self.probe = pn.widgets.IntInput.from_param(
            s.param.probe_days, name="End-of-observation probe (days; 0: none)", width=260)
        self.first_event = pn.widgets.Checkbox(label="First event of each case only")
        self.first_event.param.watch(lambda e: setattr(s, "first_event_only", e.new), "value")
        self.cases_design = pn.Column(
            pn.Row(*self.roles.values()), pn.Row(self.exposures, self.exposure_ends),
            pn.Row(self.windows, self.pre_window, self.age_cuts),
            pn.Row(self.probe, self.first_event))
        # --- design: prepared eras ------------------------------------------------------
        self.era_roles = {"case": select("Case id", "case"),
                          "length": select("Era length", "length"),
                          "events": select("Event count", "events")}
        self.covariates = multi("Exposure columns", "covariates")
        self.eras_design = pn.Column(pn.Row(*self.era_roles.values()), self.covariates,
                                     visible=False)
        # --- design: Eunomia ------------------------------------------------------------
        self.cdm = {
            "cdm_exposure": pn.widgets.IntInput.from_param(s.param.cdm_exposure,
                                                           name="Exposure concept id"),
            "cdm_outcome": pn.widgets.IntInput.from_param(s.param.cdm_outcome,
                                                          name="Outcome concept id"),
            "cdm_window": pn.widgets.TextInput.from_param(s.param.cdm_window,
                                                          name="Risk window"),
            "cdm_pre_window": pn.widgets.TextInput.from_param(s.param.cdm_pre_window,
                                                              name="Pre-exposure window"),
            "cdm_probe_days": pn.widgets.IntInput.from_param(
                s.param.cdm_probe_days, name="End-of-observation probe (days)")}
        for w in self.cdm.values():
            w.width = 190
        self.cdm_age_cuts = pn.widgets.TextInput.from_param(
            s.param.age_cuts, name="Age group cut points (days)", width=260)
        self.cdm_other = pn.widgets.Checkbox.from_param(
            s.param.cdm_other_drugs, name="Adjust for every other drug (penalised)")
        self.cdm_design = pn.Column(pn.Row(*self.cdm.values()),
                                    pn.Row(self.cdm_age_cuts, self.cdm_other), visible=False)
        # --- options --------------------------------------------------------------------
        self.penalty = pn.widgets.RadioButtonGroup.from_param(s.param.penalty,
                                                              options=list(PENALTIES))
        self.strength = pn.widgets.FloatInput.from_param(s.param.strength,
                                                         name="Penalty strength", width=150)
        self.interest = pn.widgets.TextInput.from_param(
            s.param.interest, name="Exposure of interest (unpenalised)", width=240)
        self.cv_folds = pn.widgets.IntInput.from_param(s.param.cv_folds,
                                                       name="CV folds (0: none)", width=150)
        self.bootstrap = pn.widgets.IntInput.from_param(
            s.param.bootstrap, name="Bootstrap replicates (0: none)", width=200)
        self.seed = pn.widgets.IntInput.from_param(s.param.seed, name="Seed", width=100)
        self.resampling = pn.Row(self.interest, self.cv_folds, self.bootstrap, self.seed)
        # --- fit --------------------------------------------------------------------------
        self.fit_button = pn.widgets.Button(label="Fit SCCS", color="primary", width=140)
        self.fit_button.on_click(self._on_fit)
        self.status = markdown("No SCCS fit yet.", sizing_mode="stretch_width",
                               css_classes=["sccs-status"])
        self.runner = JobRunner(self.status, [self.fit_button],
                                cancelling="Cancelling after the current step ...")
        self.results = SccsResults(state=s)
        s.param.watch(self._on_data, ["data_version"])

    # ------------------------------------------------------------------------------------
    def _on_data(self, *events) -> None:
        """New data: the widgets show its columns and the state's proposed design."""
        s = self.state
        kind = s.source.get("kind")
        cols = s.columns
        # the state's values first: new options may reset a widget, which writes the state
        roles = {r: getattr(s, r) for r in [*self.roles, *self.era_roles]}
        chosen = {a: list(getattr(s, a)) for a in ("exposures", "exposure_ends", "covariates")}
        for group in (self.roles, self.era_roles):
            for role, w in group.items():
                w.param.update(options=[""] + cols, value=roles[role] if roles[role] in cols
                               else "")
        for w, attr in ((self.exposures, "exposures"), (self.exposure_ends, "exposure_ends"),
                        (self.covariates, "covariates")):
            w.param.update(options=text_options(cols),
                           value=[c for c in chosen[attr] if c in cols])
        s.param.update(**{r: v if v in cols else "" for r, v in roles.items()}, **{
            a: [c for c in v if c in cols] for a, v in chosen.items()})
        self.windows.value, self.pre_window.value = s.windows, s.pre_window
        self.age_cuts.value, self.first_event.value = s.age_cuts, s.first_event_only
        self.cases_design.visible = kind in ("sample", "csv") and s.layout == "cases"
        self.eras_design.visible = kind == "csv" and s.layout == "eras"
        self.cdm_design.visible = kind == "eunomia"
        self.resampling.visible = kind != "eunomia"  # the CDM study fits itself

    async def _on_fit(self, event=None) -> None:
        await self.run_fit()

    # ------------------------------------------------------------------------------------
    async def run_fit(self) -> None:
        """Snapshot the page, run the job in a new thread once a job slot is free, poll its
        progress every 0.25 s; keep the run, or say why not (data and last run stay)."""
        if self.runner.running:
            return
        try:
            job = self.state.job()
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            self.runner.refuse(f"Cannot fit: {exc}")
            return

        def work(cancel, progress):
            return job.run(cancel, lambda stage, done, total: progress(done, total, stage))

        def keep(run, p) -> str:
            self.state.run = run
            res = run.fit
            for message in run.warnings:
                notify("warning", message, duration=0)
            state = "converged" if res.converged else "did NOT converge"
            return (f"SCCS fit done: {state} after {res.n_iter} iterations in "
                    f"{p.elapsed:.2f} s.")

        await self.runner.run(
            work, describe, notice="SCCS fit", done=keep, thread="survscan-sccs",
            cancelled=lambda p: (f"SCCS fit cancelled ({p.note or 'waiting'}), "
                                 f"{p.elapsed:.1f} s; the last results stay."))

    def __panel__(self):
        return pn.Column(
            "## Self-controlled case series",
            self.sources,
            "### Design", self.cases_design, self.eras_design, self.cdm_design,
            markdown("Windows: `a..b` days after the exposure start (inclusive, as R SCCS's "
                     "formatdata); `end`, `end+k` count from the exposure end; several "
                     "windows per drug separated by commas, drugs by `;` (`mmr: 0..42; "
                     "ns: 0..end`)."),
            "### Options",
            pn.Row(self.penalty, self.strength), self.resampling,
            pn.Row(self.fit_button, self.runner.cancel_button),
            self.runner.progress, self.status,
            self.results,
            sizing_mode="stretch_width")


def describe(p) -> str:
    """The SCCS job's stage and its count ("bootstrap 12 of 200")."""
    count = f" {p.done}" + (f" of {p.total}" if p.total else "")
    return f"SCCS: {p.note or 'waiting'}{count}, elapsed {p.elapsed:.1f} s"
