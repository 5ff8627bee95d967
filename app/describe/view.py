"""Describe tab: the first things a paper reports, before any model. Table 1 by a group column,
Kaplan-Meier by group with the log-rank test (weights, strata, trend), medians with their 95% CI,
survival at chosen times, the restricted mean to a chosen tau, and for competing risks the
cumulative incidence with Gray's test; every figure and table downloadable (PNG, SVG, CSV).

The numbers come from describing.py (engine calls); the figures from app/shell/figures.py,
shown as the same SVG that is downloaded.
"""

from __future__ import annotations

import io

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

from ..data.store import Store
from ..shell.figures import cif_figure, forest_figure, km_figure, risk_times, save, svg_markup
from ..shell.widgets import markdown, show, table, text_options
from . import describing as d

NO_GROUP = "(none)"
PLOT_OPTIONS = ("Risk table", "Censor marks", "CI bands", "Median lines", "KMunicate table")
DEFAULT_OPTIONS = ["Risk table", "Censor marks", "CI bands", "Median lines"]
COMPETING = "Incidence of each cause (competing risks)"
ANY_EVENT = "Kaplan-Meier of any event"


class DescribeView(Viewer):
    store = param.ClassSelector(class_=Store)
    lazy = param.Boolean(default=False, doc="Compute only once shown (the app's tab: a new "
                                            "session does not wait for this tab's numbers).")

    def __init__(self, **params):
        super().__init__(**params)
        self.group = pn.widgets.Select(label="Group by", width=220)
        # Table 1
        self.t1_columns = pn.widgets.MultiChoice(label="Rows of Table 1", width=620)
        self.t1_nonnormal = pn.widgets.MultiChoice(
            label="Shown as median [IQR] instead of mean (SD)", width=620)
        self.t1_message = markdown(css_classes=["table-one-message"])
        self.t1_table = table(css_classes=["table-one"], pagination="local", page_size=40)
        self.t1_csv = self._download("Table 1 (CSV)", "table_one.csv", self._t1_csv)
        # survival
        self.strata = pn.widgets.Select(label="Stratify the test by", width=220)
        self.weights = pn.widgets.Select(label="Test", options=list(d.WEIGHTS), width=300)
        self.fh_p = pn.widgets.FloatInput(label="p (rho)", value=1.0, start=0, step=0.5, width=90)
        self.fh_q = pn.widgets.FloatInput(label="q (gamma)", value=1.0, start=0, step=0.5,
                                          width=90)
        self.outcome = pn.widgets.RadioButtonGroup(options=[COMPETING, ANY_EVENT],
                                                   value=COMPETING, visible=False)
        self.cause = pn.widgets.Select(label="Cause", width=120, visible=False)
        self.options = pn.widgets.CheckButtonGroup(options=list(PLOT_OPTIONS),
                                                   value=list(DEFAULT_OPTIONS))
        self.conf_type = pn.widgets.Select.from_param(
            self.store.param.conf_type, label="Confidence limits (bands and tables)",
            options=d.CONF_TYPES, width=260)
        self.test_text = markdown(css_classes=["survival-test"], sizing_mode="stretch_width")
        self.message = markdown(css_classes=["survival-message"], sizing_mode="stretch_width")
        self.caption = markdown(css_classes=["survival-caption"], sizing_mode="stretch_width")
        self.figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                  css_classes=["survival-figure"])
        self.png = self._download("Figure (PNG)", "survival.png", lambda: self._figure("png"))
        self.svg = self._download("Figure (SVG)", "survival.svg", lambda: self._figure("svg"))
        self.test_table = table(css_classes=["survival-test-table"])
        self.medians = table(css_classes=["median-table"])
        self.times = pn.widgets.TextInput(label="Survival at times (comma-separated)", width=300)
        self.at_table = table(css_classes=["survival-at-table"])
        self.tau = pn.widgets.FloatInput(label="RMST up to tau", start=0, width=160)
        self.rmst = table(css_classes=["rmst-table"])
        self.tables_csv = self._download("Survival tables (CSV)", "survival_tables.csv",
                                         self._tables_csv)
        self.km_section = pn.Column(
            "#### Median survival (95% CI, R's print(survfit))", self.medians,
            pn.Row(self.times), self.at_table, pn.Row(self.tau), self.rmst,
            "#### Observed and expected events", self.test_table)
        self.subgroups = pn.widgets.MultiChoice(
            label="Hazard ratio between the two groups within subgroups of", width=620)
        self.subgroup_message = markdown(css_classes=["subgroup-message"],
                                         sizing_mode="stretch_width")
        self.subgroup_table = table(css_classes=["subgroup-table"])
        self.subgroup_figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                           css_classes=["subgroup-figure"])
        self.subgroups.param.watch(self._draw_subgroups, "value")
        self._subgroup_fig = None
        self.frames: dict[str, pd.DataFrame] = {}
        self._fig = None
        self._hold = False
        self._stale = False
        self.group.param.watch(self._on_group, "value")
        self.t1_columns.param.watch(self._draw_table_one, "value")
        self.t1_nonnormal.param.watch(self._draw_table_one, "value")
        for widget in (self.strata, self.weights, self.fh_p, self.fh_q, self.outcome,
                       self.cause, self.options, self.times, self.tau):
            widget.param.watch(self._draw_survival, "value")
        self.store.param.watch(self._on_conf_type, ["conf_type"])
        self.store.param.watch(self._on_data, ["data_version", "time", "start", "event",
                                               "event_codes", "id", "weights", "treatment"])
        self._on_data()

    # ------------------------------------------------------------------------------------
    def _download(self, label, filename, callback):
        def safe():
            try:
                return io.BytesIO(callback())
            except Exception as exc:  # a download never shows a traceback
                self.message.object = f"{label}: {exc}"
                return io.BytesIO(f"export failed: {exc}\n".encode())
        return pn.widgets.FileDownload(callback=safe, filename=filename, label=label,
                                       color="primary", width=200)

    def show(self) -> None:
        """The tab was opened: compute from now on (and what changed while it was hidden)."""
        self.lazy = False
        self.catch_up()

    def hide(self) -> None:
        """The tab was left: data changes wait until it is shown again."""
        self.lazy = True

    def catch_up(self) -> None:
        """Compute what changed while hidden (the numbers are wanted, say for an export)."""
        if self._stale:
            self._stale = False
            lazy, self.lazy = self.lazy, False
            try:
                self._on_data()
            finally:
                self.lazy = lazy

    def _on_conf_type(self, *events) -> None:
        """The shared confidence limits changed (here or on Results): the curves and their
        tables now if the tab is shown, else when it is next shown."""
        if self.lazy:
            self._stale = True
        else:
            self._draw_survival()

    def _on_data(self, *events) -> None:
        if self.lazy:
            self._stale = True
            return
        s = self.store
        if s.data is None or s.time is None or s.event is None:
            self.message.object = ("Load data and choose the time and event columns (Data "
                                   "tab); simulated cohorts have no Table 1 or curves here.")
            self._clear()
            return
        roles = {s.time, s.start, s.event, s.id, s.weights}
        others = [c for c in s.columns if c not in roles]
        self._hold = True
        try:
            self.group.options = [NO_GROUP, *others]
            self.strata.options = [NO_GROUP, *others]
            if self.strata.value not in self.strata.options:
                self.strata.value = NO_GROUP
            causes = d.causes(s)
            self.outcome.visible = bool(causes)
            self.cause.options = {str(c): c for c in causes}
            if causes and self.cause.value not in causes:
                self.cause.value = s.cause if s.cause in causes else causes[0]
            hi = float(pd.to_numeric(s.data[s.time], errors="coerce").max())
            ticks = risk_times(0.0, hi) if hi > 0 else [0.0]
            self.times.value = ", ".join(f"{t:g}" for t in ticks[1:-1][::2] or ticks[-1:])
            self.tau.value = ticks[-1] if ticks[-1] > 0 else hi
            self.group.value = s.treatment if s.treatment in others else NO_GROUP
        finally:
            self._hold = False
        self._on_group()

    def _clear(self) -> None:
        self.figure.object = None
        self._fig = None
        for widget in (self.t1_table, self.test_table, self.medians, self.at_table, self.rmst):
            widget.value = pd.DataFrame()
        self.frames = {}

    def _by(self) -> str | None:
        return None if self.group.value in (None, NO_GROUP) else self.group.value

    def _on_group(self, *events) -> None:
        if self._hold or self.store.data is None:
            return
        by = self._by()
        columns = d.default_table_columns(self.store, by)
        self._hold = True
        try:
            self.t1_columns.options = text_options(columns)
            self.t1_columns.value = [c for c in columns if c in self.store.covariates] or columns
            self.t1_nonnormal.options = text_options(columns)
            self.t1_nonnormal.value = [c for c in self.t1_nonnormal.value if c in columns]
            self.subgroups.options = text_options(columns)
            self.subgroups.value = [c for c in self.subgroups.value if c in columns]
        finally:
            self._hold = False
        self._draw_table_one()
        self._draw_survival()
        self._draw_subgroups()

    # ------------------------------------------------------------------------------------
    def _draw_table_one(self, *events) -> None:
        if self._hold or self.store.data is None:
            return
        try:
            t1, left_out = d.baseline_table(self.store, self._by(), self.t1_columns.value,
                                            self.t1_nonnormal.value)
        except Exception as exc:  # a choice the data cannot answer: say so, keep the page
            self.t1_message.object = f"Table 1 is not available: {exc}"
            self.t1_table.value = pd.DataFrame()
            self.frames.pop("table_one", None)
            return
        shown = d.table_display(t1, self._by())
        self.frames["table_one"] = shown
        self.t1_message.object = (
            "n (%) for categorical rows, mean (SD) or median [Q1, Q3] for numbers; SMD = "
            "standardised mean difference; Missing = rows without a value."
            + (" One row per subject: each subject's first (start, stop] episode, the "
               "values at entry." if self.store.start and self.store.id else "")
            + (f" {left_out} row(s) without a group value are left out." if left_out else ""))
        show(self.t1_table, shown)

    def _competing(self) -> bool:
        return self.outcome.visible and self.outcome.value == COMPETING

    def _draw_survival(self, *events) -> None:
        if self._hold or self.store.data is None:
            return
        s = self.store
        strata = None if self.strata.value in (None, NO_GROUP) else self.strata.value
        fh = self.weights.value == "Fleming-Harrington (p, q)"
        self.fh_p.visible = self.fh_q.visible = fh
        self.cause.visible = self._competing()
        self.weights.visible = not self._competing()
        self.km_section.visible = not self._competing()
        self.options.visible = not self._competing()     # the curve options are Kaplan-Meier's
        self.conf_type.visible = not self._competing()
        self.frames = {k: v for k, v in self.frames.items() if k == "table_one"}
        try:
            groups = d.groups_of(s, self._by(), strata)
            note = ""
            if groups.dropped:
                note = " Left out for missing values: " + ", ".join(
                    f"{n} row(s) without {c}" for c, n in groups.dropped.items()) + "."
            if self._competing():
                self._draw_incidence(groups, strata)
            else:
                self._draw_km(groups, strata)
            self.message.object = note.strip()
        except Exception as exc:  # a choice the data cannot answer: say so, keep the page
            self.message.object = f"Not available: {exc}"
            self.test_text.object = ""
            self.figure.object = None
            self.caption.object = ""
            self._fig = None
            for widget in (self.test_table, self.medians, self.at_table, self.rmst):
                widget.value = pd.DataFrame()   # no numbers of an earlier choice stay

    def _draw_km(self, groups, strata) -> None:
        s = self.store
        rho, gamma, weighting = d.weights_of(self.weights.value, self.fh_p.value or 0.0,
                                             self.fh_q.value or 0.0)
        km = d.survival_by(groups, s.conf_type)
        test = d.logrank(groups, rho, gamma, weighting)
        words = d.logrank_words(test, d.logrank_name(self.weights.value, rho, gamma),
                             strata is not None)
        trend = d.trend_words(test)
        self.test_text.object = "  \n".join(f"**{w}**" if k == 0 else w
                                            for k, w in enumerate([words, trend]) if w)
        table_ = km.table.assign(group=km.table["group"].map(groups.shown))
        hi = float(table_["time"].max())
        options = set(self.options.value)
        risk = None
        if {"Risk table", "KMunicate table"} & options:
            risk = d.risk_counts(km, groups, risk_times(0.0, hi),
                                 so_far="KMunicate table" in options)
        medians = km.median["median"].rename(index=groups.shown)
        self._fig = km_figure(
            table_, risk, medians if "Median lines" in options else None, time_label=s.time,
            note=words, ci="CI bands" in options, censor_marks="Censor marks" in options,
            kmunicate="KMunicate table" in options,
            title=f"Kaplan-Meier{' by ' + groups.column if groups.column else ''}")
        self.figure.object = svg_markup(self._fig)
        self.caption.object = d.km_caption(options, s.conf_type)
        med = d.median_table(km, groups)
        self.frames["medians"] = med
        show(self.medians, d.median_display(med))
        try:
            times = d.parse_times(self.times.value)
            at = d.survival_at(km, groups, times) if times else pd.DataFrame()
        except d.DescribeError as exc:
            at = pd.DataFrame({"problem": [str(exc)]})
        self.frames["survival_at"] = at
        show(self.at_table, at, 4)
        tau = self.tau.value
        rmst = d.rmst_table(km, groups, float(tau)) if tau and tau > 0 else pd.DataFrame()
        self.frames["rmst"] = rmst
        show(self.rmst, rmst, 3)
        tests = pd.DataFrame() if test is None else test.table.rename(
            index=groups.shown).reset_index()
        self.frames["logrank"] = tests
        show(self.test_table, tests, 3)

    def _draw_incidence(self, groups, strata) -> None:
        cause = self.cause.value
        curves = d.incidence_by(groups, cause)
        row = d.gray(groups, cause)
        words = d.gray_words(row, cause, strata is not None)
        self.test_text.object = f"**{words}**" if words else ""
        self._fig = cif_figure(curves, cause=cause, time_label=self.store.time, note=words)
        self.figure.object = svg_markup(self._fig)
        self.caption.object = (f"Cumulative incidence of cause {cause} (Aalen-Johansen), "
                               "shaded: pointwise 95% CI; the other causes compete.")
        self.frames["cumulative_incidence"] = curves
        self.frames["gray_test"] = pd.DataFrame() if row is None else row.to_frame().T

    def _draw_subgroups(self, *events) -> None:
        """Cox hazard ratio of the group's second level against its first, overall and in
        each level of the chosen subgroup columns, as a table and a forest plot."""
        if self._hold or self.store.data is None:
            return
        self.subgroup_table.value = pd.DataFrame()
        self.subgroup_figure.object = None
        self._subgroup_fig = None
        self.frames.pop("subgroups", None)
        if not self.subgroups.value or self._by() is None:
            self.subgroup_message.object = ("Choose a group column with two levels above and "
                                            "subgroup columns here for a forest plot.")
            return
        try:
            ratios = d.subgroup_ratios(self.store, self._by(), self.subgroups.value)
        except Exception as exc:  # a choice the data cannot answer: say so, keep the page
            self.subgroup_message.object = f"Not available: {exc}"
            return
        self.subgroup_message.object = ("Cox hazard ratio (Efron ties) of the arm alone, fitted "
                                        "in the rows of each subgroup level; p_interaction: "
                                        "Wald test of arm x subgroup in one Cox fit of all "
                                        "rows (engine.interaction_test).")
        self.frames["subgroups"] = ratios
        show(self.subgroup_table, ratios, 4)
        headed = ratios.assign(row=[r if pd.isna(p) else f"{r} (interaction p = {p:.3g})"
                                    for r, p in zip(ratios["row"], ratios["p_interaction"])])
        self._subgroup_fig = forest_figure(headed.set_index("row").rename_axis("covariate"),
                                           title=f"Hazard ratio by subgroup ({self._by()})",
                                           headings=True)
        self.subgroup_figure.object = svg_markup(self._subgroup_fig)

    # ------------------------------------------------------------------------------------
    def _figure(self, fmt: str) -> bytes:
        if self._fig is None:
            raise ValueError("no figure yet: load data with time and event columns")
        return save(self._fig, fmt)

    def _t1_csv(self) -> bytes:
        if "table_one" not in self.frames:
            raise ValueError("no Table 1 yet")
        return self.frames["table_one"].to_csv(index=False).encode()

    def _tables_csv(self) -> bytes:
        parts = [f"# {name}\n{frame.to_csv(index=False)}" for name, frame in self.frames.items()
                 if name != "table_one" and not frame.empty]
        if not parts:
            raise ValueError("no survival tables yet")
        return "\n".join(parts).encode()

    def report_files(self) -> dict[str, bytes]:
        """What the report folder takes from this tab: Table 1 and the survival tables as
        CSV, the figure as PNG and SVG."""
        self.catch_up()
        files = {f"{name}.csv": frame.to_csv(index=False).encode()
                 for name, frame in self.frames.items() if not frame.empty}
        if self._fig is not None:
            stem = "cumulative_incidence" if self._competing() else "kaplan_meier"
            files[f"{stem}.png"] = save(self._fig, "png")
            files[f"{stem}.svg"] = save(self._fig, "svg")
        if self._subgroup_fig is not None:
            files["forest_subgroups.png"] = save(self._subgroup_fig, "png")
            files["forest_subgroups.svg"] = save(self._subgroup_fig, "svg")
        return files

    def __panel__(self):
        return pn.Column(
            "## Describe",
            markdown("Table 1 and survival curves by a group column, before any model. "
                     "Choose the group here; the outcome (time, event) comes from the Data tab."),
            self.group,
            "### Table 1",
            self.t1_columns, self.t1_nonnormal, self.t1_message, self.t1_table, self.t1_csv,
            "### Survival by group",
            self.outcome,
            pn.Row(self.weights, self.fh_p, self.fh_q, self.strata, self.cause),
            pn.Row(self.options, self.conf_type),
            self.test_text, self.message,
            self.figure, self.caption,
            pn.Row(self.png, self.svg, self.tables_csv),
            self.km_section,
            "### Hazard ratio by subgroup",
            self.subgroups, self.subgroup_message, self.subgroup_table, self.subgroup_figure,
            sizing_mode="stretch_width",
        )
