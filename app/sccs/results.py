"""The SCCS page's results: the IRR table, the forest plot across drugs with the bootstrap
selection frequency, the diagnostics, the cross-validation curve and the exports (IRR table
CSV, plots HTML, JSON spec, Python script)."""

from __future__ import annotations

import io
import json

import holoviews as hv
import panel as pn
import param
from panel.viewable import Viewer

from ..shell.lazy_tab import LazyTabs
from ..shell.plots import cv_plot, plot_html
from ..shell.widgets import markdown, notify, show, table
from .plots import irr_forest, observed_expected_plot, time_to_event_plot
from .script import python_script
from .state import SccsState


def describe(run) -> str:
    """One paragraph on the run: data, eras, penalty, convergence."""
    res, sccs, opts = run.fit, run.sccs, run.spec["options"]
    text = (f"**{run.name}** on {run.spec['data']['label']}: {sccs.n_cases:,} cases, "
            f"{sccs.n_events:,} events, {sccs.n:,} eras, {sccs.p:,} columns; penalty "
            f"{res.spec.get('penalty', 'none')}; "
            f"{'converged' if res.converged else 'did NOT converge'} after {res.n_iter} "
            f"iterations; log-likelihood {res.loglik:.4f}; {run.elapsed:.2f} s.")
    if run.cv is not None:
        text += (f"  \nCross-validated {opts['penalty']} over {opts['cv_folds']} folds: "
                 f"chosen lambda {float(run.cv.penalty.lam):.4g}.")
    if run.boot is not None:
        text += (f"  \nBootstrap: {len(run.boot.replicates)} replicates (seed "
                 f"{opts['seed']}); 'selected' is the share of replicates with the "
                 "coefficient non-zero.")
    if sccs.excluded:
        text += "  \nLeft out (no within-case contrast): " + ", ".join(sccs.excluded) + "."
    return text


def diagnostic_notes(run) -> list[str]:
    """What the diagnostics show for this run, and what the data would need for the rest."""
    layout, notes = run.spec["layout"], []
    windows = run.spec["design"].get("risk_windows", {})
    if layout == "eras":
        notes.append("The diagnostics need raw case histories (observation periods and "
                     "exposure days) or the Eunomia CDM; eras carry neither.")
    elif layout == "cases" and not any(isinstance(w[0], int) and w[0] < 0
                                       for ws in windows.values() for w in ws):
        notes.append("Add a pre-exposure window (e.g. -14..-1) to see whether events change "
                     "the exposure (its IRR should be near 1).")
    if run.study is not None or run.diagnostic is not None:
        notes.append("end_of_observation: the last days of each case's observation as a "
                     "pseudo-exposure; an IRR far from 1 means events cut observation short, "
                     "against the SCCS assumption.")
    if layout == "cases":
        notes.append("Observed/expected outcomes by calendar month need calendar dates: "
                     "they are drawn for the Eunomia CDM study.")
    return notes


class SccsResults(Viewer):
    """Tables, plots and downloads of the state's last run."""

    state = param.ClassSelector(class_=SccsState)

    def __init__(self, **params):
        super().__init__(**params)
        self.summary = markdown(sizing_mode="stretch_width")
        self.irr = table(css_classes=["sccs-irr-table"], max_height=360)
        self.study = table(css_classes=["sccs-study-table"])
        self.attrition = table()
        self.forest = pn.pane.HoloViews()
        self.diagnostics_note = markdown(sizing_mode="stretch_width")
        self.pre = pn.pane.HoloViews()
        self.pre_table = table(css_classes=["sccs-diagnostic-table"])
        self.tte = pn.pane.HoloViews()
        self.oe = pn.pane.HoloViews()
        self.cv = pn.pane.Bokeh()

        def download(label, filename, callback):
            def safe():
                try:
                    return io.StringIO(callback())
                except Exception as exc:  # a download never shows a traceback
                    notify("error", f"{label}: {exc}", duration=0)
                    return io.StringIO(f"export failed: {exc}\n")
            return pn.widgets.FileDownload(callback=safe, filename=filename, label=label,
                                           width=260)

        self.downloads = pn.Row(
            download("IRR table (CSV)", "sccs_irr.csv", self.irr_csv),
            download("Plots (HTML)", "sccs_plots.html", self.plots_html),
            download("Analysis spec (JSON)", "sccs_spec.json", self.spec_json),
            download("Python script (.py)", "sccs_analysis.py", self.script_text))
        self.script = markdown(sizing_mode="stretch_width")
        self.study_box = pn.Column("### Eunomia study: the exposure's IRR and attrition",
                                   self.study, self.attrition, visible=False)
        # each a page of its own tabs (app/shell/lazy_tab.py: only the open one is in the browser),
        # a new fit opening its IRRs: sent at once, the five plots and four tables were most
        # of the time between the fit's end and its results on the page
        self.pages = LazyTabs({
            "Incidence-rate ratios": lambda: pn.Column(
                self.irr, self.study_box, self.forest, sizing_mode="stretch_width"),
            "Diagnostics": lambda: pn.Column(
                self.diagnostics_note, self.pre, self.pre_table, pn.Row(self.tte, self.oe),
                self.cv, sizing_mode="stretch_width"),
            "Downloads and script": lambda: pn.Column(
                self.downloads, "#### Python script that reproduces this fit", self.script,
                sizing_mode="stretch_width")}, sizing_mode="stretch_width")
        self.body = pn.Column(self.summary, self.pages.tabs, sizing_mode="stretch_width",
                              visible=False)
        self.state.param.watch(self.refresh, ["run"])

    # ------------------------------------------------------------------------------------
    def _run(self):
        if self.state.run is None:
            raise ValueError("no SCCS fit yet: press Fit SCCS first")
        return self.state.run

    def irr_csv(self) -> str:
        return self._run().irr_table().to_csv(index=False)

    def plots(self) -> list:
        """The plots shown, for the HTML export."""
        return [p.object for p in (self.forest, self.pre, self.tte, self.oe, self.cv)
                if p.object is not None]

    def plots_html(self) -> str:
        self._run()
        return plot_html(hv.Layout(self.plots()).cols(1), "survscan SCCS plots")

    def spec_json(self) -> str:
        return json.dumps(self._run().spec, indent=2)

    def script_text(self) -> str:
        return python_script(self._run().spec)

    # ------------------------------------------------------------------------------------
    def refresh(self, *events) -> None:
        run = self.state.run
        if run is None:
            self.body.visible = False
            return
        self.summary.object = describe(run)
        show(self.irr, run.irr_table(), 4)
        self.forest.object = irr_forest(run.exposure_table())
        self.study_box.visible = run.study is not None
        if run.study is not None:
            show(self.study, run.study.irr, 4)
            show(self.attrition, run.study.attrition)
        pre = run.pre_exposure()
        probe = run.study is not None or run.diagnostic is not None
        self.pre.object = None if pre is None else irr_forest(
            pre, "Diagnostic model: risk windows" + (", end-of-observation probe" if probe
                                                      else ""))
        self.pre_table.visible = pre is not None
        if pre is not None:
            show(self.pre_table, pre, 4)
        days = run.days_to_event()
        self.tte.object = None if days is None else time_to_event_plot(days)
        self.oe.object = None if run.study is None else observed_expected_plot(
            run.study.observed_expected)
        self.diagnostics_note.object = "  \n".join(diagnostic_notes(run))
        self.cv.object = None if run.cv is None else cv_plot(
            run.cv.curve, float(run.cv.penalty.lam), run.spec["options"]["penalty"])
        self.script.object = f"```python\n{python_script(run.spec)}\n```"
        self.pages.tabs.active = 0
        self.body.visible = True

    def __panel__(self):
        return self.body
