"""Sensitivity tab: a grid of variants of the current analysis fitted together by
engine.sensitivity_study (one sorted layout per stratum design; subgroups as weights), in a
worker thread with progress and Cancel, shown as a specification curve (the hazard ratio of
the treatment in every variant, sorted, with its 95% CI), a forest of each axis varied alone,
a table with each variant's choices and E-values (VanderWeele & Ding 2017), calibrated p and
CI from negative-control outcomes with their funnel (Schuemie et al. 2014, 2018), and the
table, figure and script to take away.

The axes offered come from the current analysis (app.sensitivity.grid): adjustment sets,
subgroups, strata designs, penalties, ends of follow-up, the treatment's effect split at cut
points and both tie rules.  The count of variants and engine's estimate of their time and
memory are read from the store before running.  The numbers are the engine's; each variant
equals its own engine.fit (tests/engine/sensitivity).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

from ..data.store import Store, parse_cut_points
from ..shell.figures import save, specification_figure
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, notify, show, table, text_options
from . import grid
from .plots import axis_forest, funnel_plot, specification_curve

SHOWN = ["variant", "covariates", "subgroup", "strata", "penalty", "follow_up", "cut_points",
         "ties", "coefficient", "hr", "hr_lower", "hr_upper", "p", "calibrated_p",
         "calibrated_hr", "calibrated_lower", "calibrated_upper", "n", "events", "evalue_point",
         "evalue_ci", "error", "note"]
MAX_SECONDS = 600       # the default refusal: a grid estimated to take longer


class SensitivityView(Viewer):
    store = param.ClassSelector(class_=Store)
    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        self.adjust = pn.widgets.CheckBoxGroup(options=grid.ADJUST,
                                               value=["all", "alone", "drop"], inline=False)
        self.subgroup = pn.widgets.Select(label="Subgroups by (each level, and everyone)",
                                          width=260)
        self.ties = pn.widgets.CheckBoxGroup(options={"Breslow": "breslow", "Efron": "efron"},
                                             value=[s.effective_ties], inline=True)
        self.strata = pn.widgets.CheckBoxGroup(inline=False)
        self.penalty = pn.widgets.CheckBoxGroup(inline=False)
        self.follow_up = pn.widgets.TextInput(
            label="End follow-up at (times; besides the whole follow-up)",
            placeholder="e.g. 26, 52", width=300)
        self.quartiles = pn.widgets.Button(label="Quartiles of follow-up", width=180)
        self.quartiles.on_click(self._quartiles)
        self.cuts = pn.widgets.TextInput(label="Split the treatment's effect at (times)",
                                         placeholder="e.g. 20, 40", width=300)
        self.controls = pn.widgets.MultiChoice(
            label="Negative-control outcomes (0/1 event columns)", width=300)
        self.max_seconds = pn.widgets.IntInput(label="Refuse above (seconds, estimated)",
                                               value=MAX_SECONDS, start=1, width=200)
        self.size = markdown(sizing_mode="stretch_width")
        self.run_button = pn.widgets.Button(label="Run the variants", color="primary",
                                            width=170)
        self.run_button.on_click(self._on_run)
        self.status = markdown(sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [self.run_button])
        self.runner.param.watch(self._count, "running")   # the count line says if it may run
        # HoloViews panes stay visible inside Columns that are shown (see adjusted_view.py)
        self.curve = pn.pane.HoloViews()
        self.forest = pn.pane.HoloViews()
        self.forest_caption = markdown(sizing_mode="stretch_width")
        self.funnel = pn.pane.HoloViews()
        self.calibration = markdown(sizing_mode="stretch_width")
        self.funnel_box = pn.Column(self.calibration, self.funnel, visible=False,
                                    sizing_mode="stretch_width")
        self.table = table(pagination="local", page_size=15, css_classes=["sensitivity-table"])
        self.csv = self._download("Table (CSV)", "sensitivity.csv",
                                  lambda: io.StringIO(self.done().table.to_csv(index=False)))
        self.png = self._download("Specification curve (PNG)", "specification_curve.png",
                                  lambda: io.BytesIO(self.figure("png")))
        self.svg = self._download("Specification curve (SVG)", "specification_curve.svg",
                                  lambda: io.BytesIO(self.figure("svg")))
        self.script = markdown(sizing_mode="stretch_width")
        self.results = pn.Column(self.curve, self.forest_caption, self.forest,
                                 self.funnel_box, visible=False, sizing_mode="stretch_width")
        self.exports = pn.Column(pn.Row(self.csv, self.png, self.svg),
                                 "### Python script that runs this study", self.script,
                                 visible=False, sizing_mode="stretch_width")
        self.result = None
        self.outcome = None
        for w in (self.adjust, self.subgroup, self.ties, self.strata, self.penalty,
                  self.follow_up, self.cuts, self.max_seconds):
            w.param.watch(self._count, "value")
        self.controls.param.watch(self._sync_designs, "value")
        s.param.watch(self._sync, ["data_version", "columns", "covariates", "treatment",
                                   "strata", "penalty", "strength", "time", "event", "start",
                                   "id", "weights", "ties", "model", "cut_points"])
        self._sync()

    def _download(self, label, filename, callback):
        def safe():
            try:
                return callback()
            except Exception as exc:             # a download never shows a traceback
                notify("error", f"{label}: {exc}", duration=0)
                return io.StringIO(f"export failed: {exc}\n")
        return pn.widgets.FileDownload(callback=safe, filename=filename, label=label,
                                       width=240)

    def done(self) -> grid.Outcome:
        """The last finished study; ValueError before the first."""
        if self.outcome is None:
            raise ValueError("run the variants first")
        return self.outcome

    def figure(self, fmt: str) -> bytes:
        return save(specification_figure(self.done().table), fmt)

    def _sync(self, *events) -> None:
        s = self.store
        self.subgroup.options = {"(none)": None, **text_options(grid.few_levels(s))}
        columns = grid.event_columns(s)
        self.controls.param.update(options=text_options(columns),
                                   value=[c for c in self.controls.value if c in columns])
        self._sync_designs()

    def _sync_designs(self, *events) -> None:
        """Strata and penalty choices; an outcome named as a negative control is no stratum."""
        s = self.store
        for widget, options in ((self.strata, grid.strata_options(s, self.controls.value)),
                                (self.penalty, grid.penalty_options(s))):
            kept = [v for v in widget.value if v in options.values()] or ["own"]
            widget.param.update(options=options, value=kept)
        self._count()

    def _quartiles(self, event=None) -> None:
        """The quartiles of the follow-up times into the box (three significant digits)."""
        if not self.store.loaded or not self.store.time:
            notify("warning", "Sensitivity: load data and choose the time column first")
            return
        time = pd.to_numeric(self.store.column(self.store.time), errors="coerce")
        times = time.quantile([0.25, 0.5, 0.75]).dropna()
        self.follow_up.value = ", ".join(dict.fromkeys(f"{t:.3g}" for t in times if t > 0))

    def picks(self) -> grid.Picks:
        """The tab's choices; DataLoadError naming a time that is not one."""
        return grid.Picks(
            adjust=list(self.adjust.value), subgroup=self.subgroup.value,
            ties=list(self.ties.value), strata=list(self.strata.value),
            penalties=list(self.penalty.value),
            follow_up=(parse_cut_points(self.follow_up.value, "end of follow-up")
                       if self.follow_up.value.strip() else []),
            cuts=(parse_cut_points(self.cuts.value, "cut point")
                  if self.cuts.value.strip() else []),
            controls=list(self.controls.value))

    def _count(self, *events) -> None:
        try:
            picks = self.picks()
            sizes = grid.sizes(self.store, picks)
            cost = grid.cost(self.store, picks, self.max_seconds.value)
        except ValueError as exc:                       # DataLoadError is one
            self.size.object = f"Not ready: {exc}"
            self.run_button.disabled = True
            return
        self.run_button.disabled = self.runner.running or bool(cost["refused"])
        total = int(np.prod(list(sizes.values())))
        parts = " x ".join(f"{n} {axis}" for axis, n in sizes.items()) or "the analysis alone"
        estimate = (f"engine's estimate: about {cost['seconds']:.2g} s and "
                    f"{cost['bytes'] / 1e6:.3g} MB")
        refused = f"\n\n**Refused**: {cost['refused']}" if cost["refused"] else ""
        self.size.object = (f"**{total} variants** of the hazard ratio of "
                            f"{self.store.treatment} ({parts}); {estimate}.{refused}")

    async def _on_run(self, event=None) -> None:
        await self.run_study()

    async def run_study(self) -> None:
        """Plan, then fit every variant in a worker thread once a job slot is free."""
        if self.runner.running:
            return
        try:
            plan = grid.plan(self.store, self.picks(), self.max_seconds.value)
        except ValueError as exc:                       # DataLoadError is one
            self.runner.refuse(f"Sensitivity: {exc}")
            return

        def done(outcome, progress) -> str:
            self.show_result(outcome, grid.script(self.store, plan))
            result = outcome.result
            return (f"{result.table['variant'].nunique()} variants in {progress.elapsed:.1f} s "
                    f"(the engine: {result.timings.get('total', float('nan')):.2f} s).")

        await self.runner.run(
            lambda cancel, progress: grid.run(plan, progress=progress, cancel=cancel),
            lambda p: f"Fitting … {p.done} of {p.total} variants, {p.elapsed:.1f} s",
            notice="Sensitivity study", done=done, failed="The study failed",
            cancelled=lambda p: "Cancelled; the earlier study stays.",
            thread="survscan-sensitivity")

    def show_result(self, outcome: grid.Outcome, script: str) -> None:
        self.outcome, self.result = outcome, outcome.result
        t = outcome.table
        self.curve.object = specification_curve(t)
        rows = grid.by_axis(outcome.result, t)
        self.forest.object = axis_forest(rows) if len(rows) else None
        self.forest_caption.object = (
            "**Each axis varied alone**: the hazard ratio at every choice of one axis with the "
            "other axes at their base, the first choice listed (the current analysis where it "
            "is ticked); each row is one fitted variant of the table. Failed variants are left "
            "out (the table says why)." if len(rows) else "") + self._strengths(outcome)
        failed = t.loc[t["error"] != "", "variant"].nunique()
        if failed:
            notify("warning", f"Sensitivity: {failed} variant(s) could not be fitted; the "
                              "table's error column says why")
        self._show_calibration(outcome)
        show(self.table, t[[c for c in SHOWN if c in t.columns]], 4)
        self.script.object = f"```python\n{script}\n```"
        self.results.visible = self.exports.visible = True

    @staticmethod
    def _strengths(outcome: grid.Outcome) -> str:
        """The penalties' lambda_max and the strengths fitted, when a choice is a fraction."""
        if outcome.lambda_max is None:
            return ""
        fitted = [f"{label}: {type(v).__name__}({v.lam:.4g})" for label, v in
                  outcome.result.axes.choices["penalty"].items() if v is not None]
        return (f"\n\nPenalties: lambda_max = {outcome.lambda_max:.4g} (engine.lambda_max "
                "of the base analysis on every row); fitted " + "; ".join(fitted) + ".")

    def _show_calibration(self, outcome: grid.Outcome) -> None:
        for message in outcome.warnings:
            notify("warning", f"Sensitivity: {message}")
        if outcome.null is None:
            self.funnel_box.visible = False
            return
        c, null = outcome.controls, outcome.null
        failed = c[c["error"] != ""]
        said = "; ".join(f"{r.outcome}: {r.error}" for r in failed.itertuples())
        self.calibration.object = (
            f"**Empirical calibration** by {null.n} negative-control outcome(s) (each over the "
            f"analysis's follow-up, {null.left_out} left out): the null's mean "
            f"{null.mean:.3f}, sd {null.sd:.3f} (log HR). The table's calibrated_p and "
            "calibrated_hr / lower / upper are EmpiricalCalibration's calibrateP and "
            "calibrateConfidenceInterval."
            + ("\n\n" + "\n\n".join(outcome.warnings) if outcome.warnings else "")
            + (f"\n\nNot fitted: {said}" if said else ""))
        base = outcome.table.iloc[0]
        self.funnel.object = funnel_plot(c, null, {"log_rr": base["estimate"],
                                                   "se": base["se"]}
                                         if np.isfinite(base["estimate"]) else None)
        self.funnel_box.visible = True

    def __panel__(self):
        return pn.Column(
            "## Sensitivity: the treatment's hazard ratio across analysis variants",
            pn.Row(pn.Column("Adjustment sets", self.adjust, self.subgroup, "Ties", self.ties),
                   pn.Column("Strata designs", self.strata,
                             markdown(f"Columns of at most {grid.MAX_LEVELS} levels and no "
                                      "missing value; for age bands, cut age into groups on "
                                      "the Data tab (Recode).", width=220)),
                   pn.Column("Penalties (the treatment unpenalised)", self.penalty,
                             markdown("lambda_max: the smallest L1 strength at which every "
                                      "penalised coefficient is zero (engine.lambda_max, the "
                                      "Fit tab's scale)", width=260)),
                   pn.Column(self.follow_up, self.quartiles, self.cuts, self.controls,
                             self.max_seconds)),
            self.size, pn.Row(self.run_button, self.runner.cancel_button, self.runner.progress),
            self.status,
            self.results, self.table, self.exports, sizing_mode="stretch_width")
