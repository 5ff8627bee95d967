"""Data view: open a sample, a file, a DuckDB query or a simulated cohort; assign column roles;
see the validation report (the engine's CohortError message, plus simple counts)."""

from __future__ import annotations

from functools import cached_property

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..shell import config
from ..shell.bounded_dropper import BoundedFileDropper
from ..shell.lazy_tab import LazyTabs
from ..shell.widgets import in_thread, markdown, newest_file, notify, show, table, text_options
from .loading import DataLoadError, big_data_way_out, query_duckdb, read_upload
from .memory import check_simulation, check_upload
from .recode_view import RecodeView
from .samples import SAMPLES
from .store import MAX_PREVIEW_ROWS, Store, duckdb_source, upload_source

NONE = "(none)"
GLANCE_ROWS = 8  # rows of the light HTML preview on the first page
ROLES = ("time", "start", "event", "event_codes", "treatment", "covariates", "strata", "id",
         "weights")


class DataView(Viewer):
    """Loading data, column roles and the validation report."""

    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        # --- sources ---------------------------------------------------------------------
        self.sample = pn.widgets.Select(label="Bundled sample", options=list(SAMPLES),
                                        value=s.source.get("name", "rossi")
                                        if s.source.get("kind") == "sample" else "rossi")
        self.open_sample = pn.widgets.Button(label="Open sample", color="primary")
        self.open_sample.on_click(self._open_sample)
        self.file = BoundedFileDropper(multiple=False, chunk_size=4_000_000,
                                       accepted_filetypes=[".csv", ".parquet", ".pq",
                                                           ".txt", "text/csv"])
        self.file.param.watch(self._open_file, "value")
        self.file.param.watch(lambda e: notify("error", f"{e.new}. {big_data_way_out()}",
                                               duration=0), "refused")
        self._opened = None  # the upload last opened (the dropper re-sends its whole value)
        self.db_path = pn.widgets.TextInput(
            label="DuckDB file in the data directory (opened read-only)",
            placeholder="empty: an in-memory database with the samples as tables")
        self.sql = pn.widgets.TextAreaInput(label="SQL", value="SELECT * FROM rossi", height=90)
        self.run_sql = pn.widgets.Button(label="Run query", color="primary")
        self.run_sql.on_click(self._run_query)
        # three to a row inside the 560 px "Open data" column (at the default 300 px each the
        # row ran under the validation report beside it)
        small = {"width": 165}
        self.sim_n = pn.widgets.IntInput(label="N (rows)", value=10_000, start=10, step=1000,
                                         **small)
        self.sim_p = pn.widgets.IntInput(label="P (covariates)", value=20, start=1, step=10,
                                         **small)
        self.sim_density = pn.widgets.FloatInput(label="density", value=0.05, start=0.001,
                                                 end=1.0, step=0.01, **small)
        self.sim_strata = pn.widgets.IntInput(label="strata", value=1, start=1, **small)
        self.sim_seed = pn.widgets.IntInput(label="seed", value=0, start=0, **small)
        self.simulate = pn.widgets.Button(label="Simulate cohort", color="primary")
        self.simulate.on_click(self._simulate)
        # the File, DuckDB and Simulate panes are drawn when first opened (a first page with
        # fewer models loads faster in the browser; the widgets exist and keep their values)
        self.sources = LazyTabs({
            "Sample": lambda: pn.Column(self.sample, self.open_sample),
            "File": lambda: pn.Column(self.file, markdown(
                f"CSV (comma-separated, one header row) or Parquet, up to "
                f"{config.max_upload_mb():g} MB. {big_data_way_out()}", margin=(0, 10))),
            "DuckDB": lambda: pn.Column(self.db_path, self.sql, self.run_sql),
            "Simulate": lambda: pn.Column(pn.Row(self.sim_n, self.sim_p, self.sim_density),
                                          pn.Row(self.sim_strata, self.sim_seed),
                                          self.simulate),
        }).tabs
        self.about = markdown(sizing_mode="stretch_width")
        s.param.watch(self._show_source, "data_version")  # e.g. a switched analysis
        s.param.watch(self._say_reset, "data_version")
        # --- roles -----------------------------------------------------------------------
        self.w = {
            "time": pn.widgets.Select(label="Time (or stop)"),
            "start": pn.widgets.Select(label="Start (entry, for start/stop rows)"),
            "event": pn.widgets.Select(label="Event"),
            "event_codes": pn.widgets.MultiChoice(label="Event codes (empty: non-zero = event)"),
            "treatment": pn.widgets.Select(label="Treatment / grouping"),
            "covariates": pn.widgets.CrossSelector(label="Covariates (search; >> selects all)",
                                                   definition_order=True, height=230,
                                                   width=520),
            "strata": pn.widgets.MultiChoice(label="Strata"),
            "id": pn.widgets.Select(label="Subject id"),
            "weights": pn.widgets.Select(label="Weights"),
        }
        for role, widget in self.w.items():
            widget.param.watch(lambda e, role=role: self._to_store(role, e.new), "value")
        self._syncing = False
        s.param.watch(self._sync_widgets, ["columns", "data_version", *ROLES])
        self.missing = pn.widgets.RadioBoxGroup.from_param(
            s.param.missing, options={"stop and show them": "stop",
                                      "drop them (complete-case analysis)": "drop"},
            inline=True)
        s.param.watch(self._validate, ["data_version", "model", "missing", *ROLES])
        # --- report and preview -----------------------------------------------------------
        # Tables are made when first needed: a Tabulator costs the server about 30 ms to make
        # and the browser about 0.4 s to draw (150 re-layouts as it sizes its columns), most
        # of the first page's work in the browser (issue 29: six users arriving together)
        self.report = markdown(sizing_mode="stretch_width")
        self.problems_box = pn.Column(sizing_mode="stretch_width")  # the table only when needed
        self.glance = pn.pane.DataFrame(index=False, escape=True, na_rep="NA",
                                        sizing_mode="stretch_width",
                                        css_classes=["data-glance"])
        self.browse = pn.widgets.Toggle(label=f"Browse and sort the first {MAX_PREVIEW_ROWS} rows",
                                        width=300)
        self.browse.param.watch(self._show_preview, "value")
        self.preview_box = pn.Column(sizing_mode="stretch_width")
        # the recode steps are drawn when their tab is first opened (as the sources above)
        self.below = LazyTabs({
            "Preview (first rows)": lambda: pn.Column(self.glance, self.browse, self.preview_box,
                                                      sizing_mode="stretch_width"),
            "Recode and filter": lambda: self.recode,
        }, sizing_mode="stretch_width").tabs
        self._sync_widgets()
        self._validate()
        self._show_source()  # a tab built after an analysis was restored

    # ------------------------------------------------------------------------------------
    # loading (errors become notifications; the loaded data stays as it was)
    def _guard(self, action, what: str) -> bool:
        try:
            action()
        except Exception as exc:  # never a traceback on the page
            _notify_failure(what, exc)
            return False
        return True

    def _open_sample(self, event=None) -> None:
        if self._guard(lambda: self.store.load_sample(self.sample.value), "Opening the sample"):
            notify("success", f"Opened {self.sample.value}", duration=3000)

    async def _load(self, read, source: dict, what: str) -> bool:
        """``read()`` in a worker thread (parsing and queries never hold the page), then the
        frame into the store; a refusal or error is a notification and the old data stay."""
        self.sources.loading = True
        try:
            df = await in_thread(read, name="survscan-load")
        except Exception as exc:  # never a traceback on the page
            _notify_failure(what, exc)
            return False
        finally:
            self.sources.loading = False
        with pn.io.hold(freeze=True):  # the new data reach the page as one patch
            return self._guard(lambda: self.store.load_frame(df, source), what)

    async def _open_file(self, event=None) -> None:
        dropped = newest_file(self.file.value)
        if dropped is None or dropped == self._opened:
            return  # nothing, or a removal re-sent the files already opened
        self._opened = dropped
        filename, data = dropped
        if await self._load(lambda: _read_upload(filename, data), upload_source(filename),
                            f"Opening {filename}"):
            notify("success", f"Opened {filename}: {self.store.n_rows:,} rows", duration=3000)

    async def _run_query(self, event=None) -> None:
        path, sql = self.db_path.value, self.sql.value
        if await self._load(lambda: query_duckdb(path, sql), duckdb_source(path, sql),
                            "DuckDB"):
            notify("success", f"Query returned {self.store.n_rows:,} rows", duration=3000)

    async def _simulate(self, event=None) -> None:
        args = (self.sim_n.value, self.sim_p.value, self.sim_density.value,
                self.sim_strata.value, self.sim_seed.value)
        if None in args:
            notify("error", "Simulation: fill in N, P, density, strata and seed", duration=0)
            return
        self.simulate.loading = True
        try:
            cohort = await in_thread(_simulate_cohort, *args)
        except (ValueError, engine.CohortError) as exc:
            notify("error", f"Simulation: {exc}", duration=0)
            return
        except Exception as exc:
            notify("error", f"Simulation failed: {type(exc).__name__}: {exc}", duration=0)
            return
        finally:
            self.simulate.loading = False
        self._guard(lambda: self.store.load_simulated(*args, cohort=cohort), "Simulation")
        notify("success", f"Simulated {self.store.source.get('label')}", duration=3000)

    def _say_reset(self, *events) -> None:
        """New data reset the model, penalty scale, strata or cut points: one line says which."""
        if self.store.reset_note:
            notify("info", self.store.reset_note, duration=8000)

    def _show_source(self, *events) -> None:
        """The source pickers show where the data on screen came from: a switched or reopened
        analysis brings its own sample, query or simulation settings."""
        src = self.store.source
        kind = src.get("kind")
        if kind == "sample" and src.get("name") in SAMPLES:
            self.sample.value = src["name"]
        elif kind == "duckdb":
            self.db_path.value, self.sql.value = src.get("path", ""), src.get("sql", "")
        elif kind == "simulated":
            for widget, key in ((self.sim_n, "n"), (self.sim_p, "p"),
                                (self.sim_density, "density"), (self.sim_strata, "n_strata"),
                                (self.sim_seed, "seed")):
                widget.value = src[key]
        tabs = {"sample": 0, "csv": 1, "parquet": 1, "duckdb": 2, "simulated": 3}
        if kind in tabs:
            self.sources.active = tabs[kind]

    # ------------------------------------------------------------------------------------
    # roles <-> widgets
    def _to_store(self, role, value) -> None:
        if self._syncing:
            return
        if role in ("covariates", "strata", "event_codes"):
            value = list(value or [])
        elif value == NONE:
            value = None
        try:
            setattr(self.store, role, value)
        except Exception as exc:  # e.g. a value the store refuses
            notify("error", f"{role}: {exc}")

    def _sync_widgets(self, *events) -> None:
        s = self.store
        cols = list(s.columns)
        optional = {NONE: None, **{c: c for c in cols}}
        self._syncing = True
        try:
            simulated = s.simulated is not None
            for role in ("time", "event"):
                self.w[role].options = cols
                self.w[role].disabled = simulated
            for role in ("start", "treatment", "id", "weights"):
                self.w[role].options = optional
                self.w[role].disabled = simulated and role != "treatment"
            codes = s.event_code_options()
            self.w["event_codes"].options = text_options(codes)
            self.w["event_codes"].disabled = simulated or not codes
            role_cols = {s.time, s.event, s.start, s.id, s.weights} - {None}
            if simulated:
                cov_options = list(s.simulated.names)
                strata_options = ["strata"] if "strata" in cols else []
            else:
                cov_options = [c for c in cols if c not in role_cols]
                strata_options = [c for c in cols if c not in role_cols]
            self.w["covariates"].options = cov_options
            self.w["strata"].options = text_options(strata_options)
            for role in ROLES:
                value = getattr(s, role)
                if role in ("covariates", "strata", "event_codes"):
                    opts = self.w[role].options
                    allowed = set(opts.values() if isinstance(opts, dict) else opts)
                    self.w[role].value = [v for v in value if v in allowed]
                else:
                    self.w[role].value = value if value in cols else None
        finally:
            self._syncing = False
        self.glance.object = s.preview(GLANCE_ROWS)
        if self.preview_box.objects:
            show(self.preview, s.preview())
        src = s.source
        self.about.object = (f"**{src.get('label', 'no data')}** — {s.n_rows:,} rows, "
                             f"{len(cols):,} columns. {src.get('about', '')}"
                             + (f"  \n{s.reset_note}" if s.reset_note else ""))

    # ------------------------------------------------------------------------------------
    def _validate(self, *events) -> None:
        try:
            r = self.store.validation_report()
        except Exception as exc:  # the report must never break the page
            self.report.object = f"**Validation could not run:** {type(exc).__name__}: {exc}"
            return
        self.report.object = report_markdown(r)
        if len(r["problems"]):
            show(self.problems, r["problems"])
        self.problems_box.objects = [self.problems] if len(r["problems"]) else []

    @cached_property
    def recode(self) -> RecodeView:
        """Recode, filter and weight steps (made when their tab is first opened)."""
        return RecodeView(store=self.store)

    @cached_property
    def problems(self) -> pn.widgets.Tabulator:
        """The rows the validation report names (made the first time there are any)."""
        return table(height=160)

    @cached_property
    def preview(self) -> pn.widgets.Tabulator:
        """The first rows, paged and sortable (made when the user asks to browse them)."""
        return table(pagination="local", page_size=10, layout="fit_data_table",
                     css_classes=["data-preview"])

    def _show_preview(self, event) -> None:
        """The Browse toggle swaps the glance at the first rows for the paged table."""
        with pn.io.hold():
            if event.new:
                show(self.preview, self.store.preview())
            self.preview_box.objects = [self.preview] if event.new else []
            self.glance.visible = not event.new

    def __panel__(self):
        s = self.w
        roles = pn.Column(
            "### Column roles",
            pn.Row(s["time"], s["start"], s["event"]),
            pn.Row(s["event_codes"], s["treatment"]),
            s["covariates"],
            pn.Row(s["strata"], s["id"], s["weights"]),
            pn.Row(markdown("Rows with missing values in these columns:", margin=(8, 10)),
                   self.missing),
        )
        return pn.Column(
            "## Data",
            pn.Row(pn.Column("### Open data", self.sources, width=560),
                   pn.Column("### Validation report", self.report, self.problems_box,
                             sizing_mode="stretch_width")),
            self.about,
            roles,
            self.below,
            sizing_mode="stretch_width",
        )


def _read_upload(filename, data):
    check_upload(filename, len(data))  # refused before parsing, with the numbers
    return read_upload(filename, data)


def _simulate_cohort(n, p, density, n_strata, seed):
    check_simulation(int(n), int(p), float(density))
    return engine.simulate(int(n), int(p), density=float(density), n_strata=int(n_strata),
                           seed=int(seed))


def report_markdown(r: dict) -> str:
    """The validation report as Markdown."""
    lines = []
    if r["ok"]:
        lines.append("**Ready to fit.**")
    else:
        lines.append(f"**Not ready:** {r['error']}")
    facts = [f"rows: **{r['rows']:,}**"]
    if r["events"] is not None:
        facts.append(f"events: **{r['events']:,}**")
        facts.append(f"censored: **{r['censored']:,}** ({r['censored_pct']:.1f}%)")
    if r.get("causes"):
        facts.append("by cause: " + ", ".join(f"{k}: **{v:,}**" for k, v in r["causes"].items()))
    if r.get("subjects"):
        facts.append(f"subjects: **{r['subjects']:,}**")
    if r.get("strata"):
        facts.append(f"strata: **{r['strata']}**")
    if r.get("covariates") is not None:
        facts.append(f"model columns: **{r['covariates']}**")
    lines.append(" · ".join(facts))
    if r.get("n_dropped"):
        by_column = ", ".join(f"{k}: {v:,}" for k, v in r["dropped"].items())
        lines.append(f"Complete-case analysis: **{r['n_dropped']:,} row(s) dropped** for "
                     f"missing values ({by_column}); every fit reports them.")
    for w in r.get("warnings", []):
        lines.append(f"Warning: {w}")
    return "\n\n".join(lines)


def _notify_failure(what: str, exc: Exception) -> None:
    """A refused input is named as such; anything else is reported as unexpected."""
    if isinstance(exc, (DataLoadError, engine.CohortError, ValueError)):
        notify("error", f"{what}: {exc}", duration=0)
    else:
        notify("error", f"{what} failed unexpectedly: {type(exc).__name__}: {exc}", duration=0)
