"""OMOP study view: a comparative new-user study on an OMOP CDM (engine.cdm.run_study).

Choose the CDM (the bundled Eunomia GiBleed by default), the target, comparator and outcome
concepts and the study windows; Run study works in a thread. The page then shows the
attrition, counts, hazard ratios, the preference-score distribution, covariate balance and
Kaplan-Meier by arm. The PS-stratified outcome model is kept as the fit "OMOP: PS-stratified",
so it joins the Results comparison and the exports.
"""

from __future__ import annotations

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

from ..data.loading import DataLoadError
from ..shell.job_runner import JobRunner
from ..shell.widgets import in_thread, markdown, show, table
from .jobs import STUDY_FIT_NAME
from .plots import balance_plot, km_by_arm_plot, preference_plot
from .state import OmopState



# ----------------------------------------------------------------------------------------
# tables and plots of a StudyResult (no numerics: the engine computed everything)
def hazard_ratio_table(hazard_ratios: pd.DataFrame) -> pd.DataFrame:
    """analysis, HR (95% CI) as text, and the numbers."""
    df = hazard_ratios[["analysis", "hr", "lower", "upper", "p", "persons", "outcomes"]].copy()
    df.insert(1, "HR (95% CI)", [f"{r.hr:.3f} ({r.lower:.3f} to {r.upper:.3f})"
                                 for r in df.itertuples()])
    return df


class OmopView(Viewer):
    """Settings, Run study, and the study's tables and plots."""

    state = param.ClassSelector(class_=OmopState)

    def __init__(self, **params):
        super().__init__(**params)
        sp = self.state.param
        self.path = pn.widgets.TextInput.from_param(
            sp.path, name="CDM: DuckDB file or Parquet folder (empty: Eunomia GiBleed)",
            placeholder="empty: the bundled Eunomia GiBleed CDM", width=460)
        self.concepts = {
            "target": pn.widgets.IntInput.from_param(sp.target, name="Target concept id"),
            "comparator": pn.widgets.IntInput.from_param(sp.comparator,
                                                         name="Comparator concept id"),
            "outcome": pn.widgets.IntInput.from_param(sp.outcome, name="Outcome concept id"),
        }
        for w in self.concepts.values():
            w.width = 200
        self.names = markdown("Concept names are looked up in the CDM's vocabulary.",
                                      sizing_mode="stretch_width")
        self.lookup_button = pn.widgets.Button(label="Look up concepts", width=160)
        self.lookup_button.on_click(self._on_lookup)
        windows = [
            pn.widgets.IntInput.from_param(sp.prior_observation,
                                           name="Prior observation (days)"),
            pn.widgets.IntInput.from_param(sp.risk_window_end,
                                           name="Risk window end (days)"),
            pn.widgets.IntInput.from_param(sp.ps_strata, name="PS strata"),
            pn.widgets.IntInput.from_param(sp.match_ratio, name="Match ratio (1:k)"),
            pn.widgets.FloatInput.from_param(sp.caliper, name="Caliper (SD of logit PS)",
                                             step=0.05),
        ]
        for w in windows:
            w.width = 170
        self.windows = pn.Row(*windows)
        self.rules = pn.Row(
            pn.widgets.Checkbox.from_param(sp.common_period,
                                           name="Restrict to the common period (index dates "
                                                "where both drugs are in use)"),
            pn.widgets.Checkbox.from_param(sp.censor_new_window,
                                           name="Censor at the start of a new time at risk"))
        self.run_button = pn.widgets.Button(label="Run study", color="primary", width=140)
        self.run_button.on_click(self._on_run)
        self.status = markdown("No study yet: press **Run study**.",
                                       sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [self.run_button],
                                cancelling="Cancelling after the current step ...")
        self.summary = markdown(sizing_mode="stretch_width")
        self.hr = table(css_classes=["omop-hr-table"])
        self.attrition = table()
        self.counts = table()
        self.balance_summary = table()
        self.preference = pn.pane.HoloViews()
        self.balance = pn.pane.HoloViews()
        self.km = pn.pane.HoloViews()
        self.km_matched = pn.pane.HoloViews()
        # hidden by _on_study, not by HoloViews(visible=False): served, a pane built hidden
        # fails to draw its plot (Bokeh: "unexpected attribute 'design' to figure")
        self.km_weighted = pn.pane.HoloViews()
        self.results = pn.Column(
            self.summary,
            "### Hazard ratios (target vs comparator)", self.hr,
            "### Attrition (persons per arm after each rule)", self.attrition,
            "### Counts", self.counts,
            pn.Row(self.preference, self.balance),
            "#### Balance summary", self.balance_summary,
            pn.Row(self.km, self.km_matched), self.km_weighted,
            sizing_mode="stretch_width", visible=False)
        self._named = False  # names are looked up when the tab is first shown (App)
        self.state.param.watch(self._on_ids, ["path", "target", "comparator", "outcome"])
        self._shown = None  # the StudyRun on the page
        self.state.param.watch(self._on_study, "study")
        if self.state.study is not None:  # a tab built after an analysis was restored
            self._on_study()

    # ------------------------------------------------------------------------------------
    async def _on_lookup(self, event=None) -> None:
        await self.lookup_names()

    async def _on_ids(self, *events) -> None:
        await self.lookup_names()

    async def on_show(self) -> None:
        """The tab was opened: look up the concept names once."""
        if not self._named:
            await self.lookup_names()

    async def lookup_names(self) -> None:
        """Concept names of the three ids, by a read-only query in a thread."""
        try:
            job = self.state.job()
            names = await in_thread(job.concept_names, name="survscan-concepts")
        except Exception as exc:  # a bad path or a CDM without a vocabulary: a message
            self.names.object = f"Concept names not available: {exc}"
            return
        self.show_names(names)

    def show_names(self, names: dict) -> None:
        s = self.state
        self._named = True
        self.names.object = " · ".join(
            f"**{role}** {names.get(cid, '(not in the concept table)')} ({cid})"
            for role, cid in (("target", s.target), ("comparator", s.comparator),
                              ("outcome", s.outcome)))

    def _on_study(self, *events) -> None:
        """The analysis on screen changed (switched to, reopened): show its study, or none."""
        run = self.state.study
        if run is self._shown:
            return
        if run is None:
            self._shown = None
            self.results.visible = False
            self.status.object = "No study yet: press **Run study**."
            return
        self.show(run)
        self.status.object = (f"The study of this analysis (on {run.settings['database']}); "
                              "press **Run study** to run it again.")

    async def _on_run(self, event=None) -> None:
        await self.run_study()

    async def run_study(self) -> None:
        """Snapshot the settings, run engine.cdm.run_study in a thread, show the result."""
        if self.runner.running:
            return
        try:
            job = self.state.job()
        except DataLoadError as exc:
            self.runner.refuse(f"Study not run: {exc}", f"Cannot run the study: {exc}")
            return

        def keep(run, p) -> str:
            self.show(run)
            self.state.keep(run)
            return (f"Study done in {p.elapsed:.1f} s. The PS-stratified model is kept as the "
                    f"fit **{STUDY_FIT_NAME}** (Results, Export).")

        def where(p) -> str:
            return f"{p.note} (step {p.done + 1} of {p.total})" if p.total else "opening the CDM"

        await self.runner.run(
            job.run, lambda p: (f"Running the study on {job.settings['database']} … "
                                f"{where(p)}, {p.elapsed:.0f} s"),
            notice="OMOP study", failed="Study failed", done=keep, thread="survscan-omop-study",
            cancelled=lambda p: (f"Study cancelled at {where(p)}, {p.elapsed:.1f} s; the "
                                 "earlier study stays."))

    def show(self, run) -> None:
        """Fill the tables and plots from a StudyRun."""
        res = run.result
        self._shown = run
        self.show_names(run.names)
        ps = res.propensity
        self.summary.object = (
            f"**{run.label(run.settings['target'])}** vs "
            f"**{run.label(run.settings['comparator'])}**, outcome "
            f"**{run.label(run.settings['outcome'])}** on {run.settings['database']}.  \n"
            f"Propensity model: {res.covariates.X.shape[1]} baseline covariates, penalty "
            f"{ps.penalty}, {len(ps.coefficients) - 1} non-zero; equipoise "
            f"{ps.equipoise:.1%} (preference score 0.3–0.7).")
        hr = hazard_ratio_table(res.hazard_ratios)
        show(self.hr, hr, 4)
        show(self.attrition, res.attrition)
        show(self.counts, res.counts, 2)
        bal = res.balance_summary.reset_index(names="analysis")
        show(self.balance_summary, bal, 3)
        cohort = res.cohort[["treatment", "preference"]]
        self.preference.object = preference_plot(cohort)
        self.balance.object = balance_plot(res.balance_stratified, res.balance_matched,
                                           res.balance_weighted)
        self.km.object = km_by_arm_plot(res.km, "Kaplan-Meier by arm (all persons)")
        self.km_matched.object = km_by_arm_plot(
            res.km_matched, "Kaplan-Meier by arm (matched; comparators 1/m of their set)")
        if res.km_weighted is not None:
            title = f"Kaplan-Meier by arm (PS weighted, {res.spec['weighting']})"
            self.km_weighted.object = km_by_arm_plot(res.km_weighted, title)
        self.km_weighted.visible = res.km_weighted is not None
        self.results.visible = True

    def __panel__(self):
        return pn.Column(
            "## OMOP study (comparative new users, CohortMethod's design)",
            self.path,
            pn.Row(*self.concepts.values(), self.lookup_button),
            self.names,
            self.windows,
            self.rules,
            pn.Row(self.run_button, self.runner.cancel_button),
            self.runner.progress,
            self.status,
            self.results,
            sizing_mode="stretch_width",
        )
