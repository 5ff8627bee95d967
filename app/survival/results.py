"""Results view: hazard ratios with a forest plot, Kaplan-Meier curves with an at-risk table,
splines and interactions (Wald tests, hazard-ratio curves), the proportional-hazards check,
residuals (functional form, influence, outliers), covariate-adjusted curves by treatment, how
well the fit predicts, and the comparison of kept fits.

The view is a list of sections (``ResultsView.sections``), each one page of its own tabs
(app/shell/lazy_tab.py: only the open one is in the browser); cumulative incidence (Fine-Gray) and
the cross-validation curve join them when the engine has them.  A new fit opens its hazard
ratios: sent whole, the eight sections were about 500 Bokeh models that the browser laid out
again after every fit (1.5-2 s of the click-to-result time on the 2-core machine).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..describe import describing
from ..shell.choices import RATIOS
from ..shell.lazy_tab import LazyTabs
from ..shell.on_screen import OnScreen
from ..shell.plots import cif_plot, cv_plot, forest_plot, km_plot, nice_ticks
from ..shell.widgets import markdown, notify, show, table, while_filled, while_set, while_visible
from .adjusted import AdjustedView
from .imputation import ImputationView
from .jobs import coefficient_comparison, comparison, nested_lr_tests
from .ph_check import PhCheck
from .prediction import PredictionView
from .residuals import ResidualsView
from .state import Workbench
from .terms import TermsView

NO_GROUP = "(all together)"
# the first page: the fit's ratios (HR, sHR or IRR by its model), tests and forest plot
ESTIMATES = "Estimates"
CURVES = "Survival curves"  # the page of the Kaplan-Meier and cumulative incidence curves
MAX_GROUPS = 8


# ----------------------------------------------------------------------------------------
# Kaplan-Meier
def km_groups(store: Store, group: str | None) -> pd.Series:
    """Group labels per row: the column's levels; a many-valued number is cut in quartiles."""
    if not group or group == NO_GROUP:
        return pd.Series("all", index=range(store.n_rows))
    values = store.column(group).reset_index(drop=True)
    if values.nunique() > MAX_GROUPS and pd.api.types.is_numeric_dtype(values):
        quartile = pd.qcut(values, 4, duplicates="drop")
        return (f"{group} " + quartile.astype(str)).astype(str)
    return (f"{group} = " + values.astype(str)).astype(str)


def fit_km(store: Store, group: str | None) -> pd.DataFrame:
    """engine.kaplan_meier per group: its table (time, group, at_risk, events, censored,
    survival, lower, upper); subjects with (start, stop] episodes counted as R's survfit id=."""
    return km_result(store, group).table


def km_result(store: Store, group: str | None):
    """engine.kaplan_meier of the current time, event (and start, id, weights) by ``group``:
    weights that are not whole numbers (IPTW) give R's robust variance, as the fit's."""
    frame = store.km_frame().reset_index(drop=True)
    labels = km_groups(store, group)
    if labels.nunique() > MAX_GROUPS:
        raise ValueError(f"{group!r} has {labels.nunique()} levels; pick a column with at most "
                         f"{MAX_GROUPS} groups")
    cohort = engine.Cohort.from_frame(
        frame, time="time", event="event", covariates=[],
        start="start" if "start" in frame else None, id="id" if "id" in frame else None,
        weights="weights" if "weights" in frame else None)
    return engine.kaplan_meier(cohort, by=labels.to_numpy(), conf_type=store.conf_type)


def at_risk_table(km, ticks: list[float]) -> pd.DataFrame:
    """At risk, events and censored per group at each tick as R's summary(survfit, times=)
    counts them (engine.KaplanMeier.at): at risk at the tick, events and censored since the
    tick before."""
    counts = km.at(ticks, extend=True)
    return counts.rename(columns={"at_risk": "at risk"})[["group", "time", "at risk", "events",
                                                          "censored"]]


def at_risk_display(risk: pd.DataFrame) -> pd.DataFrame:
    """The at-risk table as printed under a KM plot: one row per group and count, times across."""
    if risk.empty:
        return risk
    long = risk.melt(id_vars=["group", "time"], value_vars=["at risk", "events", "censored"],
                     var_name="count")
    wide = long.pivot_table(index=["group", "count"], columns="time", values="value",
                            sort=False).astype(int)
    wide.columns = [f"{t:g}" for t in wide.columns]
    return wide.reset_index()


# ----------------------------------------------------------------------------------------
# cumulative incidence (competing risks)
def cif_frame(store: Store, group: str | None) -> pd.DataFrame:
    """time, event code (0 censored, 1..k causes), group label, and start, id and weights
    (when set) per row."""
    frame = store.km_frame().drop(columns="event").rename(columns={"codes": "event"})
    if frame["event"].isna().any():
        raise ValueError(f"the event column {store.event!r} must hold numeric codes "
                         "(0 censored, 1..k causes)")
    return frame.assign(event=frame["event"].astype(int),
                        group=km_groups(store, group).to_numpy())


def cif_curves(store: Store, group: str | None, cause: int) -> pd.DataFrame:
    """engine.cumulative_incidence (Aalen-Johansen) of ``cause`` per group, with the entry
    times, ids and weights set (R's robust variance)."""
    frame = cif_frame(store, group)
    return engine.cumulative_incidence(
        frame, cause=int(cause), by="group", time="time", event="event",
        **{role: role for role in ("start", "id", "weights") if role in frame})


def cif_gray(store: Store, group: str | None, cause: int) -> str:
    """Gray's test of ``cause`` between the groups, in words ("" for a single group)."""
    frame = cif_frame(store, group)
    if frame["group"].nunique() < 2:
        return ""
    if "start" in frame or "weights" in frame:
        return ("Gray's test is not shown: it has neither entry times nor case weights. "
                "Kaplan-Meier of any event is not drawn: 1 - KM overstates each cause's "
                "incidence when causes compete.")
    row = engine.gray_test(frame, "group", cause=int(cause), time="time",
                           event="event").table.iloc[0]
    return (f"Gray's test for cause {cause}: chi-square = {row['statistic']:.2f} on "
            f"{int(row['df'])} df, p = {row['p']:.3g}. Kaplan-Meier of any event is not drawn: "
            "1 - KM overstates each cause's incidence when causes compete.")


# ----------------------------------------------------------------------------------------
# cross-validation of the penalty


def cv_table(curve: pd.DataFrame, chosen: float) -> pd.DataFrame:
    table_ = curve[["lambda", "mean", "sd"]].copy()
    table_["chosen"] = np.where(table_["lambda"] == chosen, "◀ chosen", "")
    return table_


# ----------------------------------------------------------------------------------------
# hazard ratios
def hr_table(summary: pd.DataFrame, model: str = "cox") -> pd.DataFrame:
    """The ratio table of KeptFit.summary, its ratio named as ``model``'s (RATIOS): HR, the
    subdistribution hazard ratio sHR of Fine-Gray, the incidence rate ratio IRR of Poisson
    (whose intercept row is the baseline rate per unit of time)."""
    cols = ["coef", "hr", "hr_lower", "hr_upper", "se", "p", "penalized"]
    out = summary[cols].reset_index()
    if model != "cox":
        short = RATIOS[model][0]
        out = out.rename(columns={"hr": short, "hr_lower": f"{short}_lower",
                                  "hr_upper": f"{short}_upper"})
    return out


def model_of(fit) -> str:
    return fit.spec["options"].get("model", "cox")


def ratio_name(model: str) -> str:
    """``model``'s ratios in the plural, without the model: "Incidence rate ratios"."""
    return RATIOS[model][2].split(" (")[0]


def ratio_file(model: str) -> str:
    """The CSV file name of ``model``'s ratio table: hazard_ratios.csv,
    subdistribution_hazard_ratios.csv, incidence_rate_ratios.csv."""
    return RATIOS[model][1].replace(" ", "_") + "s.csv"


def forest_labels(fit, short: bool = False) -> dict:
    """The forest plot's ratio name (``short``: HR, sHR, IRR) and title for ``fit``'s model
    (Cox: the plots' defaults)."""
    model = model_of(fit)
    if model == "cox":
        return {}
    abbreviation, name, _ = RATIOS[model]
    return {"ratio": abbreviation if short else name, "title": f"{ratio_name(model)} (95% CI)"}


def forest_rows(fit) -> pd.DataFrame:
    """The rows a forest plot shows: the ratios, not a Poisson fit's baseline rate."""
    return fit.summary.drop(index="(intercept)", errors="ignore").head(60)


class ResultsView(Viewer):
    """The kept fit chosen, above its sections (``sections``: title, layout), one tab each."""

    store = param.ClassSelector(class_=Store)
    workbench = param.ClassSelector(class_=Workbench)
    lazy = param.Boolean(default=False, doc="Draw only while shown (the app's tab: ``show`` "
                                            "and ``hide`` follow the open tab).")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        self.screen = OnScreen(shown=not self.lazy)
        # the Kaplan-Meier and cumulative incidence curves redraw while their own page (a tab
        # of this view) is open: a first fit of new data drew them for a page nobody had
        # opened (0.2 s of its click-to-result at 10^5 rows)
        self.curves_screen = OnScreen(shown=False)
        self.group = pn.widgets.Select(label="Curves by", width=240)
        self.window = pn.widgets.RangeSlider(label="Time window (zoom)", start=0, end=1,
                                             value=(0, 1), step=0.1, width=420)
        self.early = pn.widgets.Button(label="First 30 time units", width=170)
        self.early.on_click(self._early)
        self.full = pn.widgets.Button(label="Whole follow-up", width=150)
        self.full.on_click(self._full)
        self.ci = pn.widgets.Checkbox(label="CI bands", value=True)
        self.conf_type = pn.widgets.Select.from_param(   # the Describe tab's choice too
            s.param.conf_type, label="Confidence limits", options=describing.CONF_TYPES,
            width=200)
        # the curves and the counts under them as two panes whose time axes Panel links: the
        # two as one HoloViews Layout (a Bokeh GridPlot) lost its axes and text when the page
        # around it was laid out again (Results after the first fit showed a blank plot)
        self.km_curves = pn.pane.HoloViews(css_classes=["km-curves"])
        self.km_counts = pn.pane.HoloViews()
        self.km = pn.pane.HoloViews()  # never shown: the whole figure, for the HTML export
        self.risk = table()
        self.km_message = markdown()
        self.cif_cause = pn.widgets.Select(label="Cause", width=160)
        self.cif = pn.pane.HoloViews()
        self.cif_message = markdown()
        self.cif_section = pn.Column("### Cumulative incidence (competing risks)", self.cif_cause,
                                     self.cif_message, self.cif, visible=False)
        self.km_section = pn.Column(
            "#### Kaplan-Meier", pn.Row(self.window, self.early, self.full), self.km_message,
            self.km_curves, self.km_counts, "#### At-risk table", while_filled(self.risk))
        self.cif_cause.param.watch(self._draw_cif, "value")
        self.fit_select = pn.widgets.Select(label="Fit", width=240)
        self.fit_info = markdown(sizing_mode="stretch_width")
        self.fit_tests = markdown(sizing_mode="stretch_width", css_classes=["fit-tests"])
        # two fixed headings shown in turn (a Markdown pane whose heading text changes after
        # the first render lost the section style)
        self.hr_title = pn.pane.Markdown("### Hazard ratios")
        self.ph = PhCheck(store=s)
        self.residuals = ResidualsView(store=s)
        self.adjusted = AdjustedView(store=s)
        self.prediction = PredictionView(store=s)
        self.imputation = ImputationView(store=s)
        self.terms = TermsView()
        self.hr = table(pagination="local", page_size=12, css_classes=["hr-table"])
        self.forest = pn.pane.Bokeh(sizing_mode="fixed", css_classes=["forest-plot"])
        self.compare = table(pagination="local", page_size=10)
        self.compare_hr = table(pagination="local", page_size=15, css_classes=["compare-hr-table"])
        self.lr_tests = table(pagination="local", page_size=10, css_classes=["lr-tests"])
        self.lr_note = markdown(sizing_mode="stretch_width")
        self.across_data = pn.widgets.Checkbox(
            label="Also line up fits of other data (by covariate name)", value=False)
        self.across_data.param.watch(lambda e: self._on_fits(), "value")
        self.cv_info = markdown(css_classes=["cv-info"], sizing_mode="stretch_width")
        self.cv = pn.pane.Bokeh()
        self.cv_curve = table()
        self.cv_section = pn.Column("### Cross-validation of the penalty", self.cv_info,
                                    self.cv, self.cv_curve, visible=False)
        # what has nothing to show is left out of the page, not hidden (widgets.while_visible)
        self._parts = {
            "km": while_visible(self.km_section), "cif": while_visible(self.cif_section),
            "cv": while_visible(self.cv_section), "hr_title": while_visible(self.hr_title),
            "hr": while_filled(self.hr),
            "forest": while_set(self.forest), "compare": while_filled(self.compare),
            "compare_hr": while_filled(self.compare_hr), "lr": while_filled(self.lr_tests)}
        self.workbench.param.watch(lambda *e: self.screen.run(self._draw_cv), ["cv"])
        self.group.param.watch(self._draw_km, "value")
        self.window.param.watch(self._draw_km, "value_throttled")
        self.ci.param.watch(self._draw_km, "value")
        s.param.watch(self._draw_km, ["conf_type"])
        self.fit_select.param.watch(self._draw_fit, "value")
        s.param.watch(lambda *e: self.screen.run(self._on_data),
                      ["data_version", "treatment", "time", "start", "event", "event_codes",
                       "model"])
        self.workbench.param.watch(lambda *e: self.screen.run(self._on_fits), ["fits"])
        self.risk_frame = pd.DataFrame()
        self._hold = False
        self.sections = self._sections()
        self.pages = LazyTabs({title: lambda body=body: body for title, body in self.sections},
                              shown=self._section_shown, hidden=self._section_hidden,
                              sizing_mode="stretch_width")
        for draw in (self._on_data, self._on_fits, self._draw_cv):  # what the store holds
            self.screen.run(draw)

    def show(self) -> None:
        """The tab is shown: draw what changed while it was hidden."""
        self.screen.show()

    def hide(self) -> None:
        self.screen.hide()

    def catch_up(self) -> None:
        """Draw what is owed without showing the tab (an export reads the drawn results)."""
        self.screen.catch_up()
        self.curves_screen.catch_up()

    def open_section(self, title: str) -> None:
        """Open one of the view's pages (``title`` of ``sections``), as its tab's click does."""
        self.pages.tabs.active = list(self.pages.slots).index(title)

    def _section_shown(self, title: str) -> None:
        if title == CURVES:
            self.curves_screen.show()

    def _section_hidden(self, title: str) -> None:
        if title == CURVES:
            self.curves_screen.hide()

    # sections: (title, panel), each a page of the view's tabs, the fit's hazard ratios first
    # (cumulative incidence and the CV curve slot into the first two)
    def _sections(self) -> list[tuple[str, pn.viewable.Viewable]]:
        p = self._parts
        return [
            (ESTIMATES, pn.Column(p["hr_title"], self.fit_tests, p["hr"], p["forest"],
                                  p["cv"])),  # titled by the model's ratio: HR, sHR, IRR
            (CURVES, pn.Column(pn.Row(self.group, self.ci, self.conf_type),
                                          p["km"], p["cif"])),  # KM hidden for competing risks
            ("Splines and interactions", self.terms),
            ("Proportional hazards", self.ph),
            ("Residuals", self.residuals),
            ("Adjusted curves", self.adjusted),
            ("How well it predicts", self.prediction),
            ("Missing data", self.imputation),
            ("Kept fits", pn.Column(
                "### Comparison of kept fits", p["compare"],
                "#### Ratios side by side (each fit's own: HR, sHR or IRR)", self.across_data,
                p["compare_hr"],
                "#### Likelihood-ratio tests of nested fits", self.lr_note, p["lr"])),
        ]

    # ------------------------------------------------------------------------------------
    def _on_data(self, *events) -> None:
        s = self.store
        if not s.loaded or s.time is None or s.event is None:
            self._show_km(None)
            return
        cols = [c for c in s.columns if c not in {s.time, s.start, s.event, s.id, s.weights}]
        if s.simulated is not None:
            cols = cols[:60]
        options = [NO_GROUP] + cols
        self.group.options = options
        default = s.treatment if s.treatment in options else NO_GROUP
        try:
            times = pd.to_numeric(s.column(s.time), errors="coerce")
            lo = float(np.nanmin(pd.to_numeric(s.column(s.start), errors="coerce"))) \
                if s.start else 0.0
            hi = float(np.nanmax(times))
        except Exception:
            lo, hi = 0.0, 1.0
        lo = min(lo, 0.0)
        if not (math.isfinite(hi) and hi > lo):
            hi = lo + 1.0
        self.window.param.update(start=lo, end=hi, step=max((hi - lo) / 200, 1e-9))
        self._set_window(lo, hi, draw=False)
        if self.group.value == default:
            self._draw_km()
        else:
            self.group.value = default

    def _early(self, event=None) -> None:
        lo = self.window.start
        hi = min(lo + 30.0, self.window.end)
        self._set_window(lo, hi)

    def _full(self, event=None) -> None:
        self._set_window(self.window.start, self.window.end)

    def _set_window(self, lo: float, hi: float, draw: bool = True) -> None:
        """Move the zoom slider from code (a drag sets value_throttled itself, which redraws)."""
        self._hold = not draw
        try:
            self.window.value = (lo, hi)
            with param.edit_constant(self.window):
                self.window.value_throttled = (lo, hi)
        finally:
            self._hold = False

    def _draw_km(self, *events) -> None:
        """The curves now if their page is open, else when it is next opened."""
        if not self._hold:
            self.curves_screen.run(self._km_now)

    def _km_now(self) -> None:
        s = self.store
        if not s.loaded or s.time is None or s.event is None:
            return
        try:
            km = km_result(s, self.group.value)
            lo, hi = self.window.value
            risk = at_risk_table(km, nice_ticks(max(lo, 0.0), hi))
            layout = km_plot(km.table, risk, (lo, hi), time_label=s.time, ci=self.ci.value)
        except Exception as exc:  # bad roles: say so, keep the page
            self.km_message.object = f"Kaplan-Meier is not available: {exc}"
            self._show_km(None)
            self.risk.value = pd.DataFrame()
            self.risk_frame = pd.DataFrame()
            return
        self.km_message.object = ""
        self._draw_cif()
        self._show_km(layout)
        self.risk_frame = risk
        show(self.risk, at_risk_display(risk))

    def _show_km(self, layout) -> None:
        curves, counts = layout.values() if layout is not None else (None, None)
        with pn.io.hold():
            self.km.object = layout
            self.km_curves.object, self.km_counts.object = curves, counts

    def _draw_cif(self, *events) -> None:
        """Cumulative incidence when the event column has several causes (or Fine-Gray)."""
        s = self.store
        if self._hold or not s.loaded or s.event is None:
            return
        causes = s.cause_options() if s.simulated is None else []
        # several causes among the codes that count as events (lung's 1/2 with event code 2
        # is one event type), or a Fine-Gray model
        show = len(describing.causes(s)) >= 2 or (s.model == "fine_gray" and causes)
        self.cif_section.visible = bool(show)
        self.km_section.visible = not show  # 1 - KM of any event overstates each cause's risk
        if not show:
            self.cif.object = None
            return
        self._hold = True
        try:
            self.cif_cause.options = {str(c): c for c in causes}
            if self.cif_cause.value not in causes:
                self.cif_cause.value = s.cause if s.cause in causes else causes[0]
        finally:
            self._hold = False
        try:
            curves = cif_curves(s, self.group.value, self.cif_cause.value)
            self.cif.object = cif_plot(curves, self.cif_cause.value, self.window.value, s.time)
            self.cif_message.object = cif_gray(s, self.group.value, self.cif_cause.value)
        except Exception as exc:
            self.cif.object = None
            self.cif_message.object = f"Cumulative incidence is not available: {exc}"

    def _draw_cv(self, *events) -> None:
        run = self.workbench.cv
        self.cv_section.visible = run is not None
        if run is None:
            self.cv.object = None
            return
        res = run.result
        self.cv_info.object = (
            f"**{run.name}**: {run.penalty}, chosen lambda = **{run.chosen:.4g}** "
            f"(lambda_max {res.lambda_max:.4g}; {len(res.curve)} grid points; the refit at the "
            "chosen lambda is kept as this fit).")
        self.cv.object = cv_plot(res.curve, run.chosen, run.penalty)
        df = cv_table(res.curve, run.chosen)
        show(self.cv_curve, df, 4)

    def _on_fits(self, *events) -> None:
        bench = self.workbench
        names = [f.name for f in bench.fits]
        latest = names[-1] if names else None
        before = self.fit_select.value
        if latest != before:
            self.pages.tabs.active = 0    # a new fit: its hazard ratios
        # options and value in one step: new options alone made the Select pick its first
        # option, a second drawing of every section per fit
        self.fit_select.param.update(options=names, value=latest)
        if before == latest:
            self._draw_fit()
        comp = comparison(bench.fits)
        show(self.compare, comp, 4)
        side = (coefficient_comparison(bench.fits, across_data=self.across_data.value)
                .reset_index() if bench.fits else pd.DataFrame())
        show(self.compare_hr, side, 4)
        tests = nested_lr_tests(bench.fits)
        show(self.lr_tests, tests, 4)
        self.lr_note.object = (
            "Each pair of kept fits of these data in which the larger nests the smaller (the "
            "same subjects, model, ties and strata; more covariates, or one split at cut points; "
            "no penalty), as R's `anova(small, big)`." if len(tests) else
            "None yet: keep two unpenalised fits of these data, one with more covariates or "
            "cut points than the other, and their likelihood-ratio test is shown here.")

    def _draw_fit(self, *events) -> None:
        fit = self.workbench.get_fit(self.fit_select.value)
        if fit is None:
            self.fit_info.object = "No fit yet: press **Fit** in the Fit tab."
            self.fit_tests.object = ""
            self.hr.value = pd.DataFrame()
            self.forest.object = None
            self.ph.show_fit(None)
            self.residuals.show_fit(None)
            self.adjusted.show_fit(None)
            self.prediction.show_fit(None)
            self.terms.show_fit(None)
            self.imputation.show_fit(None)
            return
        res = fit.result
        self.fit_info.object = (
            f"**{fit.name}** — {fit.spec['data']['label']}; n = {res.n:,}, events = "
            f"{res.n_events:,}, strata = {fit.n_strata}, "
            + (f"ties = {res.spec['ties']}, " if model_of(fit) != "poisson" else "")
            + f"penalty = {res.spec['penalty']}; "
            f"{'converged' if res.converged else 'NOT converged'} in {res.n_iter} iterations"
            + (f"; {fit.dropped_text} row(s) dropped for missing values" if fit.dropped else "")
            + f". Standard errors: {res.variance_note}. "
            "Penalised coefficients have no standard error (shown as NaN).")
        self.fit_tests.object = fit.tests()
        show(self.hr, hr_table(fit.summary, model_of(fit)), 6)
        self.hr_title.object = f"### {RATIOS[model_of(fit)][2]}"
        self.ph.show_fit(fit)
        self.residuals.show_fit(fit)
        self.adjusted.show_fit(fit)
        self.prediction.show_fit(fit)
        self.terms.show_fit(fit)
        self.imputation.show_fit(fit)
        try:
            self.forest.object = forest_plot(forest_rows(fit), **forest_labels(fit))
        except Exception as exc:
            notify("warning", f"forest plot not drawn: {exc}")
            self.forest.object = None

    def __panel__(self):
        return pn.Column("## Results", self.fit_select, self.fit_info, self.pages.tabs,
                         sizing_mode="stretch_width")
