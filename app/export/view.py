"""Export view: tables as CSV, plots as standalone HTML and as PNG/SVG figures drawn on the
server (figures.py, matplotlib), the analysis spec as JSON, a Python script that reproduces the
analysis with the engine API, and the report folder (a ZIP of all of it).
"""

from __future__ import annotations

import io

import panel as pn
import param
from panel.viewable import Viewer

from ..data.store import Store
from ..describe.script import describe_lines
from ..describe.view import DescribeView
from ..shell.figures import DPI, forest_figure, save
from ..shell.on_screen import OnScreen
from ..shell.plots import forest_plot, plot_html
from ..shell.widgets import markdown, notify
from ..survival.jobs import coefficient_comparison, comparison
from ..survival.results import (ResultsView, forest_labels, forest_rows, hr_table, model_of,
                                ratio_file, ratio_name)
from ..survival.state import Workbench
from .report import report_zip


def _text(s: str) -> io.StringIO:
    return io.StringIO(s)


class ExportView(Viewer):
    store = param.ClassSelector(class_=Store)
    workbench = param.ClassSelector(class_=Workbench)
    results = param.ClassSelector(class_=ResultsView)
    describe = param.ClassSelector(class_=DescribeView)
    lazy = param.Boolean(default=False, doc="Write the script only while shown (the app's "
                                            "tab: ``show`` and ``hide`` follow the open tab).")

    def __init__(self, **params):
        super().__init__(**params)
        self.screen = OnScreen(shown=not self.lazy)

        def download(label, filename, callback):
            return pn.widgets.FileDownload(callback=self._safe(callback, label),
                                           filename=filename, label=label,
                                           color="primary", width=300)

        self.hr_csv = download("Hazard ratios (CSV)", "hazard_ratios.csv", self.hr_text)
        self.compare_csv = download("Comparison of fits (CSV)", "comparison.csv",
                                    self.comparison_text)
        self.risk_csv = download("At-risk table (CSV)", "at_risk.csv", self.risk_text)
        self.km_html = download("Kaplan-Meier plot (HTML)", "kaplan_meier.html", self.km_text)
        self.forest_html = download("Forest plot (HTML)", "forest.html", self.forest_text)
        self.forest_png = download("Forest plot (PNG)", "forest.png",
                                   lambda: io.BytesIO(self.forest_figure("png")))
        self.forest_svg = download("Forest plot (SVG)", "forest.svg",
                                   lambda: io.BytesIO(self.forest_figure("svg")))
        self.report = download("Report folder (ZIP)", "survscan_report.zip",
                               lambda: io.BytesIO(self.report_bytes()))
        self.spec_json = download("Analysis spec (JSON)", "survscan_spec.json", self.spec_text)
        self.script_py = download("Python script (.py)", "survscan_analysis.py", self.script_text)
        self.script = markdown(sizing_mode="stretch_width")
        # the script (Markdown with highlighting) is rewritten on every change of the analysis:
        # only while the tab is shown, else once when it is next shown
        self.workbench.param.watch(lambda *e: self.screen.run(self._refresh), ["fits"])
        self.store.param.watch(lambda *e: self.screen.run(self._refresh),
                               ["data_version", "time", "event", "covariates", "strata",
                                "cut_points", "ties", "penalty", "strength", "solver",
                                "backend", "start", "id", "weights", "event_codes",
                                "unpenalized", "forms", "interactions", "model", "bands",
                                "cause"])
        self.screen.run(self._refresh)

    def show(self) -> None:
        self.screen.show()
        self.screen.run(self._refresh)      # the Describe tab's choices may have changed

    def hide(self) -> None:
        self.screen.hide()

    def _safe(self, callback, label):
        def wrapped():
            try:
                for page in (self.results, self.describe):  # drawn while hidden? now
                    if page is not None:
                        page.catch_up()
                return callback()
            except Exception as exc:  # a download never shows a traceback
                notify("error", f"{label}: {exc}", duration=0)
                return _text(f"export failed: {exc}\n")
        return wrapped

    def _selected(self):
        """The fit the Results tab shows (the newest when it shows none), or None."""
        return self.workbench.get_fit(self.results.fit_select.value if self.results else None)

    def _fit(self):
        fit = self._selected()
        if fit is None:
            raise ValueError("no fit yet: press Fit in the Fit tab first")
        return fit

    def hr_text(self):
        fit = self._fit()
        return _text(hr_table(fit.summary, model_of(fit)).to_csv(index=False))

    def forest_figure(self, fmt: str) -> bytes:
        fit = self._fit()
        return save(forest_figure(forest_rows(fit), **forest_labels(fit, short=True)), fmt)

    def report_bytes(self) -> bytes:
        """Describe's tables and figure, the fit's ratios, forest plot, PH check, residuals,
        spline terms, adjusted curves and prediction metrics (those drawn), the comparison of
        fits, the spec and the script, as one ZIP."""
        files = dict(self.describe.report_files()) if self.describe is not None else {}
        if self.workbench.fits:
            fit = self._fit()
            files[ratio_file(model_of(fit))] = hr_table(fit.summary, model_of(fit)).to_csv(
                index=False).encode()
            files["forest.png"] = self.forest_figure("png")
            files["forest.svg"] = self.forest_figure("svg")
            files.update(self.results.ph.files())
            files.update(self.results.residuals.files())
            files.update(self.results.terms.files())
            files.update(self.results.adjusted.files())
            files.update(self.results.prediction.files())
            files["fit_tests.txt"] = (self.results.fit_tests.object or "").encode()
            files["comparison.csv"] = self.comparison_text().getvalue().encode()
        if self.results is not None:        # the current design's, with or without a fit
            files.update(self.results.imputation.files())
        if self.store.loaded:
            files["survscan_spec.json"] = self.store.spec_json().encode()
            try:
                files["survscan_analysis.py"] = self.script_code().encode()
            except Exception:  # roles not complete yet: no script, the rest still goes
                pass
        return report_zip(files, self.store.source.get("label", "none"), DPI)

    def comparison_text(self):
        if not self.workbench.fits:
            raise ValueError("no fit yet")
        comp = comparison(self.workbench.fits)
        side = coefficient_comparison(self.workbench.fits).T.add_prefix("ratio ")
        return _text(comp.join(side, on="fit").to_csv(index=False))

    def risk_text(self):
        return _text(self.results.risk_frame.to_csv(index=False))

    def km_text(self):
        if self.results.km.object is None:
            raise ValueError("no Kaplan-Meier plot to export")
        return _text(plot_html(self.results.km.object, "survscan Kaplan-Meier"))

    def forest_text(self):
        fit = self._fit()
        return _text(plot_html(forest_plot(forest_rows(fit), **forest_labels(fit)),
                               "survscan forest plot"))

    def spec_text(self):
        return _text(self.store.spec_json())

    def script_code(self) -> str:
        """The analysis script, with the Describe tab's analyses as it shows them."""
        code = self.store.python_script()
        if self.results is not None and self.results.imputation.script_lines():
            code = code.rstrip("\n") + "\n" + "\n".join(
                self.results.imputation.script_lines()) + "\n"
        settings = None if self.describe is None else self.describe.script_settings()
        if settings is not None:
            code = code.rstrip("\n") + "\n".join(describe_lines(settings)) + "\n"
        return code

    def script_text(self):
        return _text(self.script_code())

    def _refresh(self, *events) -> None:
        # the ratio table's button and file are named by the fit's model (HR, sHR, IRR)
        fit = self._selected()
        model = "cox" if fit is None else model_of(fit)
        self.hr_csv.label = f"{ratio_name(model)} (CSV)"
        self.hr_csv.filename = ratio_file(model)
        try:
            code = self.script_code()
        except Exception as exc:
            code = f"# the script cannot be written yet: {exc}"
        self.script.object = f"```python\n{code}\n```"

    def __panel__(self):
        return pn.Column(
            "## Export",
            pn.Row(pn.Column("### Tables", self.hr_csv, self.compare_csv, self.risk_csv),
                   pn.Column("### Plots", self.km_html, self.forest_html, self.forest_png,
                             self.forest_svg,
                             markdown("Kaplan-Meier and cumulative incidence figures (PNG, "
                                      "SVG) are on the Describe tab.", width=300)),
                   pn.Column("### Analysis", self.spec_json, self.script_py,
                             "### Report folder", self.report,
                             markdown("Every table (CSV) and figure (PNG and SVG) of the "
                                      "Describe and Results tabs, the spec and the script.",
                                      width=300))),
            "### Python script that reproduces the current analysis",
            self.script,
            sizing_mode="stretch_width",
        )
