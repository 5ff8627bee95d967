"""Describe tab: the first things a paper reports, before any model. Table 1 by a group column,
Kaplan-Meier by group with the log-rank test (weights, strata, trend), medians with their 95% CI,
survival at chosen times, the restricted mean to a chosen tau, incidence rates per person-time
with rate ratios and differences (directly standardised by a chosen column, with SMRs), and for
competing risks the cumulative incidence with Gray's test; every figure and table downloadable
(PNG, SVG, CSV).

The numbers come from describing.py (engine calls); the figures from app/shell/figures.py,
shown as the same SVG that is downloaded.  In the served app each section is computed by the
page's job runner in a worker thread (sections.py), the latest choice of each section winning;
in a script or a test, at once.
"""

from __future__ import annotations

import io

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.figures import risk_times, save
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, served, show, table, text_options
from . import describing as d
from . import sections

NO_GROUP = "(none)"
# the standardisation column as each row has it, or as it grows with follow-up (age)
AT_ENTRY, ATTAINED = "as each row has it", "attained (its value at time 0, growing)"
# the standards of the standardised rates: the cohort's own person-time, or a published one
STANDARDS = {"this cohort's person-time": "cohort",
             **{engine.standard_population(name).attrs["title"]: name
                for name in engine.STANDARD_POPULATIONS}}
PLOT_OPTIONS = ("Risk table", "Censor marks", "CI bands", "Median lines", "KMunicate table")
DEFAULT_OPTIONS = ["Risk table", "Censor marks", "CI bands", "Median lines"]
COMPETING = "Incidence of each cause (competing risks)"
# Data of at most this many rows is described in the widget's callback, at once: a change of
# group on rossi took 0.68 s from click to the page's tables so (the callback 0.22 s, the
# figure's SVG most of it) and 0.84 s through the job runner (its thread, slot and status
# line; Chromium, median of 6); larger data goes to the job runner (10^6 rows: 0.4-2.9 s that
# held the server's event loop).
INLINE_ROWS = 50_000
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
        self.t1_weighted = pn.widgets.Checkbox(label="Weighted", value=True, visible=False)
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
        self.start_time = pn.widgets.FloatInput(
            label="Conditional on event-free at", value=None, start=0, width=200,
            description="Curves and test of the rows followed to this time (a landmark): "
                        "survival from then on, given no event before (R's "
                        "survfit(start.time=)). Empty: from time 0.")
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
        self.per = pn.widgets.FloatInput(label="Rates per (units of person-time)", value=1000,
                                         start=0, width=220)
        self.rate_breaks = pn.widgets.TextInput(
            label="Split follow-up at (comma-separated times)", width=300)
        self.rates_caption = markdown(css_classes=["rates-caption"], sizing_mode="stretch_width")
        self.rates = table(css_classes=["rates-table"])
        self.rate_comparisons = table(css_classes=["rate-comparisons-table"])
        self.std_by = pn.widgets.Select(label="Standardise by", options=[NO_GROUP], width=220)
        self.std_bands = pn.widgets.TextInput(
            label="in bands at (numbers, comma-separated)", width=300,
            description="Band limits of a number column (age: 20, 30, 40 makes <= 20, "
                        "(20, 30], (30, 40], > 40). Empty: the column's own values.")
        self.std_standard = pn.widgets.Select(
            label="Standard weights", options=STANDARDS, value="cohort", width=300,
            description="Whose weights average the strata's rates: this cohort's person-time "
                        "in each, or a standard population's (the column is then an age in "
                        "years and the bands are its age groups).")
        self.std_attained = pn.widgets.RadioButtonGroup(options=[AT_ENTRY, ATTAINED],
                                                        value=AT_ENTRY)
        self.std_unit = pn.widgets.FloatInput(
            label="time units per unit of it", value=1.0, start=0, width=200,
            description="Follow-up time units per unit of the column: 365.25 for days and "
                        "years of age, 52.18 for weeks.")
        self.smr_rates = pn.widgets.TextInput(
            label="SMR reference rates (stratum: rate; ...)", width=520,
            placeholder="e.g. 15-19: 2.1; 20-24: 1.8 (empty: the cohort's own rates)",
            description="A population's rates per stratum, per the rates' unit above (a "
                        "national table's): the SMRs' expected events. Strata as the tables "
                        "name them; a standard population's groups the cohort lacks may be "
                        "left in.")
        self.std_caption = markdown(css_classes=["standardized-caption"],
                                    sizing_mode="stretch_width")
        self.std_rates = table(css_classes=["standardized-table"])
        self.std_comparisons = table(css_classes=["standardized-comparisons-table"])
        self.smr = table(css_classes=["smr-table"])
        self.tables_csv = self._download("Survival tables (CSV)", "survival_tables.csv",
                                         self._tables_csv)
        # the tables at chosen times serve both outcomes (survival, or a cause's incidence);
        # the medians, restricted means and the log-rank table are Kaplan-Meier's
        self.km_medians = pn.Column("#### Median survival (95% CI, R's print(survfit))",
                                    self.medians)
        self.km_section = pn.Column(pn.Row(self.tau), self.rmst,
                                    "#### Observed and expected events", self.test_table)
        self.subgroups = pn.widgets.MultiChoice(
            label="Hazard ratio between the two groups within subgroups of", width=620)
        self.subgroup_message = markdown(css_classes=["subgroup-message"],
                                         sizing_mode="stretch_width")
        self.subgroup_table = table(css_classes=["subgroup-table"])
        self.subgroup_figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                           css_classes=["subgroup-figure"])
        self.subgroups.param.watch(self._draw_subgroups, "value")
        self.status = markdown(css_classes=["describe-status"], sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [])
        self.runner.cancel_button.visible = False       # shown while a job runs
        self.runner.param.watch(
            lambda e: setattr(self.runner.cancel_button, "visible", e.new), "running")
        self._asked: dict[str, int] = {}    # section -> requests so far (the last one wins)
        self._pending: dict = {}     # section -> (request, compute, show), for the next job
        self._curves: sections.Curves | None = None     # the survival section's estimate
        self._subgroup_fig = None
        self.frames: dict[str, pd.DataFrame] = {}
        self._fig = None
        self._hold = False
        self._stale = False
        self._now = False            # compute at once, even when served (catch_up)
        self.group.param.watch(self._on_group, "value")
        self.t1_columns.param.watch(self._draw_table_one, "value")
        self.t1_nonnormal.param.watch(self._draw_table_one, "value")
        self.t1_weighted.param.watch(self._draw_table_one, "value")
        for widget in (self.strata, self.weights, self.fh_p, self.fh_q, self.outcome,
                       self.cause, self.options, self.start_time):
            widget.param.watch(self._draw_survival, "value")
        for widget in (self.times, self.tau):
            widget.param.watch(self._draw_tables, "value")
        for widget in (self.per, self.rate_breaks, self.std_by, self.std_bands,
                       self.std_standard, self.std_attained, self.std_unit, self.smr_rates):
            widget.param.watch(self._draw_rates, "value")
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

    def catch_up(self, now: bool = False) -> None:
        """Compute what changed while hidden; ``now``: at once, with the sections waiting for
        the job runner (the numbers are wanted, say for an export)."""
        held, self._now = self._now, now
        try:
            if self._stale:
                self._stale = False
                lazy, self.lazy = self.lazy, False
                try:
                    self._on_data()
                finally:
                    self.lazy = lazy
            waiting, self._pending = self._pending, {}
            for _, compute, show_ in waiting.values():
                show_(compute())
        finally:
            self._now = held

    # ------------------------------------------------------------------------------------
    def _data_key(self) -> str:
        """What the sections' numbers are of: the data and its roles."""
        s = self.store
        return repr((s.data_version, s.time, s.start, s.event, s.event_codes, s.id, s.weights,
                     s.cause))

    def _request(self, section: str, compute, show_, now: bool = False) -> None:
        """``show_(compute())``: at once (``now``, in a script or a test, for at most
        INLINE_ROWS rows), else by the page's job runner in a worker thread (the server's event
        loop stays free for every session).  The last request of a section wins: one that
        waits is replaced, and the result of an earlier one still running is not shown."""
        asked = self._asked[section] = self._asked.get(section, 0) + 1
        self._pending.pop(section, None)
        if now or self._now or not served() or self.store.n_rows <= INLINE_ROWS:
            show_(compute())
            return
        self._pending[section] = (asked, compute, show_)
        if not self.runner.running:
            pn.state.execute(self.work_through)

    async def work_through(self) -> None:
        """Run the waiting sections as one job, again while new ones wait.  A section's result
        is shown unless it was asked for again or the data changed meanwhile."""
        while self._pending and not self.runner.running:
            jobs, self._pending = self._pending, {}
            key = self._data_key()

            def work(cancel, progress, jobs=jobs):
                out = {}
                for k, (section, (_, compute, _)) in enumerate(jobs.items()):
                    if cancel.is_set():
                        raise engine.Cancelled("cancelled between the sections")
                    progress(k, len(jobs), section)
                    out[section] = compute()
                return out

            def done(results, progress, jobs=jobs, key=key):
                if self._data_key() != key:
                    return "The data changed meanwhile: computing again."
                for section, result in results.items():
                    asked, _, show_ = jobs[section]
                    if self._asked[section] == asked:
                        show_(result)
                return f"Computed in {progress.elapsed:.2f} s ({', '.join(results)})."

            await self.runner.run(
                work, lambda p: f"Computing {p.note or 'the page'} … ({p.elapsed:.1f} s)",
                notice="Describe", done=done, toast_done=False, thread="survscan-describe",
                cancelled=lambda p: "Cancelled: the page shows the numbers of the earlier "
                                    "choices.")

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
            self.t1_weighted.visible = bool(s.weights)
            self.t1_weighted.label = (f"Weighted by {s.weights} (the population after weighting;"
                                     " uncheck for the rows as observed)" if s.weights else "")
            self.group.options = [NO_GROUP, *others]
            self.strata.options = [NO_GROUP, *others]
            if self.strata.value not in self.strata.options:
                self.strata.value = NO_GROUP
            self.std_by.options = [NO_GROUP, *others]
            if self.std_by.value not in self.std_by.options:
                self.std_by.value = NO_GROUP
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
        self._curves = None
        self._pending = {}
        self.status.object = ""
        for widget in (self.t1_table, self.test_table, self.medians, self.at_table, self.rmst):
            widget.value = pd.DataFrame()
        self._clear_rates()
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
        store, by = self.store, self._by()
        columns, nonnormal = list(self.t1_columns.value), list(self.t1_nonnormal.value)
        weights = store.weights if self.t1_weighted.value else None
        self._request("Table 1",
                      lambda: sections.table_one(store, by, columns, nonnormal, weights),
                      self._show_table_one)

    def _show_table_one(self, numbers: dict) -> None:
        if "error" in numbers:
            self.t1_message.object = numbers["error"]
            self.t1_table.value = pd.DataFrame()
            self.frames.pop("table_one", None)
            return
        self.frames["table_one"] = numbers["table"]
        self.t1_message.object = numbers["message"]
        show(self.t1_table, numbers["table"])

    def _competing(self) -> bool:
        return self.outcome.visible and self.outcome.value == COMPETING

    def _draw_survival(self, *events) -> None:
        if self._hold or self.store.data is None:
            return
        fh = self.weights.value == "Fleming-Harrington (p, q)"
        self.fh_p.visible = self.fh_q.visible = fh
        self.cause.visible = self._competing()
        self.weights.visible = not self._competing()
        self.km_section.visible = self.km_medians.visible = not self._competing()
        self.times.label = ("Cumulative incidence at times (comma-separated)"
                            if self._competing() else "Survival at times (comma-separated)")
        self.options.visible = not self._competing()     # the curve options are Kaplan-Meier's
        self.conf_type.visible = not self._competing()
        store = self.store
        choice = sections.SurvivalChoice(
            key=self._data_key(), by=self._by(),
            strata=None if self.strata.value in (None, NO_GROUP) else self.strata.value,
            weights=self.weights.value, p=self.fh_p.value, q=self.fh_q.value,
            competing=self._competing(), cause=self.cause.value,
            options=tuple(self.options.value), conf_type=store.conf_type,
            start_time=self.start_time.value or None)
        curves = self._curves
        self._request("curves", lambda: sections.survival(store, choice, curves),
                      self._show_survival)

    def _show_survival(self, numbers: dict) -> None:
        self.frames = {k: v for k, v in self.frames.items() if k in ("table_one", "subgroups")}
        if "error" in numbers:
            self.message.object = numbers["error"]
            self.test_text.object = ""
            self.figure.object = None
            self.caption.object = ""
            self._fig = None
            self._curves = None
            for widget in (self.test_table, self.medians, self.at_table, self.rmst):
                widget.value = pd.DataFrame()   # no numbers of an earlier choice stay
            self._clear_rates()
            return
        self._curves = numbers["curves"]
        self.test_text.object = numbers["test_text"]
        self._fig = numbers["figure"]
        self.figure.object = numbers["svg"]
        self.caption.object = numbers["caption"]
        frames = dict(numbers["frames"])
        if "medians" in numbers:            # Kaplan-Meier: the medians and the test
            self.frames["medians"] = frames.pop("medians")
            show(self.medians, numbers["medians"])
            show(self.test_table, frames["logrank"], 3)
        self._draw_tables()
        self._draw_rates()
        self.frames.update(frames)
        self.message.object = numbers["message"]

    def _draw_tables(self, *events) -> None:
        """Survival at the chosen times, the restricted mean and the incidence rates, from
        the curves shown."""
        if self._hold or self._curves is None:
            return
        tables = sections.survival_tables(self._curves, self.times.value, self.tau.value)
        self.frames.update(tables)
        show(self.at_table, tables["survival_at"], 4)
        show(self.rmst, tables["rmst"], 3)

    def _draw_rates(self, *events) -> None:
        """Incidence rates of the curves' groups (of the chosen cause under competing risks),
        in the follow-up bands asked for, standardised by the chosen column, by the page's
        job runner."""
        if self._hold or self._curves is None:
            return
        curves, per, breaks = self._curves, self.per.value, self.rate_breaks.value
        cause, label = (self.cause.value if self._competing() else None), self.store.time
        column = self.std_by.value
        unit = self.std_unit.value if self.std_attained.value == ATTAINED else None
        self.std_bands.disabled = self.std_standard.value != "cohort"
        standard = (None if column in (None, NO_GROUP) or column not in self.store.columns
                    else (column, self.store.data[column], self.std_bands.value, unit,
                          self.std_standard.value, self.smr_rates.value))
        self._request("rates", lambda: sections.rates(curves, cause, per, breaks, label,
                                                      standard), self._show_rates)

    def _clear_rates(self) -> None:
        """No rates of an earlier choice stay on the page (or in the tables' CSV)."""
        for widget in (self.rates, self.rate_comparisons, self.std_rates,
                       self.std_comparisons, self.smr):
            widget.value = pd.DataFrame()
        self.rates_caption.object = self.std_caption.object = ""
        for name in ("incidence_rates", "rate_comparisons", "standardized_rates",
                     "standardized_comparisons", "smr"):
            self.frames.pop(name, None)

    def _show_rates(self, numbers: dict) -> None:
        if "error" in numbers:
            self._clear_rates()
            self.rates_caption.object = numbers["error"]
            return
        self.rates_caption.object = numbers["caption"]
        self.frames["incidence_rates"] = numbers["rates"]
        self.frames["rate_comparisons"] = numbers["comparisons"]
        show(self.rates, numbers["rates"], 4)
        show(self.rate_comparisons, numbers["comparisons"], 4)
        self.std_caption.object = numbers.get("std_caption", numbers.get("std_error", ""))
        for name, widget, key in (("standardized_rates", self.std_rates, "standardized"),
                                  ("standardized_comparisons", self.std_comparisons,
                                   "std_comparisons"), ("smr", self.smr, "smr")):
            if key in numbers:
                self.frames[name] = numbers[key]
                show(widget, numbers[key], 4)
            else:
                self.frames.pop(name, None)
                if not widget.value.empty:
                    widget.value = pd.DataFrame()

    def _draw_subgroups(self, *events) -> None:
        """Cox hazard ratio of the group's second level against its first, overall and in
        each level of the chosen subgroup columns, as a table and a forest plot."""
        if self._hold or self.store.data is None:
            return
        store, by, columns = self.store, self._by(), list(self.subgroups.value)
        if not columns or by is None:
            self._request("subgroups", lambda: {"error": (
                "Choose a group column with two levels above and subgroup columns here for a "
                "forest plot.")}, self._show_subgroups, now=True)
            return
        self._request("subgroups", lambda: sections.subgroups(store, by, columns),
                      self._show_subgroups)

    def _show_subgroups(self, numbers: dict) -> None:
        self.subgroup_table.value = pd.DataFrame()
        self.subgroup_figure.object = None
        self._subgroup_fig = None
        self.frames.pop("subgroups", None)
        if "error" in numbers:
            self.subgroup_message.object = numbers["error"]
            return
        self.subgroup_message.object = ("Cox hazard ratio (Efron ties) of the arm alone, fitted "
                                        "in the rows of each subgroup level; p_interaction: "
                                        "Wald test of arm x subgroup in one Cox fit of all "
                                        "rows (engine.interaction_test).")
        self.frames["subgroups"] = numbers["ratios"]
        show(self.subgroup_table, numbers["ratios"], 4)
        self._subgroup_fig = numbers["figure"]
        self.subgroup_figure.object = numbers["svg"]

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

    def script_settings(self) -> dict | None:
        """The tab's choices as describe/script.py writes them: None before the data and the
        time and event columns are set; {"error": why} while a typed list cannot be read."""
        s = self.store
        if s.data is None or s.time is None or s.event is None:
            return None
        by = self._by()
        try:
            test = d.weights_of(self.weights.value, self.fh_p.value or 0.0,
                                self.fh_q.value or 0.0)
            times, breaks = d.parse_times(self.times.value), d.parse_times(self.rate_breaks.value)
            column = None if self.std_by.value in (None, NO_GROUP) else self.std_by.value
            standard = self.std_standard.value
            bands = [] if standard != "cohort" else d.parse_bands(self.std_bands.value)
            reference_rates = d.parse_rates(self.smr_rates.value)
        except d.DescribeError as exc:
            return {"error": str(exc)}
        attained = self.std_attained.value == ATTAINED
        quartiles = bool(by) and s.data[by].dropna().nunique() > d.MAX_GROUPS
        return {
            "time": s.time, "event": s.event, "event_codes": list(s.event_codes),
            "fine_gray": s.competing_risks, "start": s.start, "id": s.id,
            "weights": s.weights, "group": by, "quartiles": quartiles,
            "strata": None if self.strata.value in (None, NO_GROUP) else self.strata.value,
            "competing": self._competing(), "cause": self.cause.value, "test": test,
            "conf_type": s.conf_type, "start_time": self.start_time.value or None,
            "times": times, "tau": float(self.tau.value) if self.tau.value else None,
            "per": float(self.per.value), "breaks": breaks,
            "standardise": None if column is None else {
                "column": column, "bands": bands, "standard": standard,
                "unit": float(self.std_unit.value) if attained else None,
                "reference_rates": reference_rates},
            "table_one": {"columns": list(self.t1_columns.value),
                          "nonnormal": list(self.t1_nonnormal.value),
                          "weights": s.weights if self.t1_weighted.value else None}}

    def report_files(self) -> dict[str, bytes]:
        """What the report folder takes from this tab: Table 1 and the survival tables as
        CSV, the figure as PNG and SVG."""
        self.catch_up(now=True)
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
            self.group, pn.Row(self.runner.progress, self.runner.cancel_button), self.status,
            "### Table 1",
            self.t1_columns, self.t1_nonnormal, self.t1_weighted, self.t1_message,
            self.t1_table, self.t1_csv,
            "### Survival by group",
            self.outcome,
            pn.Row(self.weights, self.fh_p, self.fh_q, self.strata, self.cause,
                   self.start_time),
            pn.Row(self.options, self.conf_type),
            self.test_text, self.message,
            self.figure, self.caption,
            pn.Row(self.png, self.svg, self.tables_csv),
            self.km_medians, pn.Row(self.times), self.at_table, self.km_section,
            "#### Incidence rates", pn.Row(self.per, self.rate_breaks), self.rates_caption,
            self.rates, self.rate_comparisons,
            "#### Standardised rates",
            pn.Row(self.std_by, self.std_standard, self.std_bands),
            pn.Row(self.std_attained, self.std_unit),
            self.std_caption,
            self.std_rates,
            self.std_comparisons, self.smr_rates, self.smr,
            "### Hazard ratio by subgroup",
            self.subgroups, self.subgroup_message, self.subgroup_table, self.subgroup_figure,
            sizing_mode="stretch_width",
        )
