"""GWAS view: a multi-trait mixed-model scan (engine.gwas.scan) of PLINK genotypes.

Choose the files (the bundled FaST-LMM toy data by default, or files in the server's data
directories), or simulate thousands of traits on the genotypes; choose kinship, traits and the
p-value threshold of the rows kept; Run scan works in a worker thread (a server-wide job slot)
with progress per SNP block, ETA and Cancel.  Then: the per-trait h2 table, Manhattan and QQ
plots of a chosen trait, a trait x locus heatmap, top hits across traits, and the exports.
"""

from __future__ import annotations

import io

import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter, ScientificFormatter
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError
from ..shell.job_runner import JobRunner
from ..shell.lazy_tab import LazyTabs
from ..shell.plots import plot_html
from ..shell.widgets import (escaped_titles, in_thread, markdown, notify, number_formatters, table,
                      text_options)
from .plots import locus_heatmap, manhattan_plot, qq_plot
from .state import ROW_LIMIT, SOURCES, GwasState

HEATMAP_TRAITS = 100       # the heatmap shows the traits with the smallest p-values
P_COLUMNS = ("PValue", "min_p")


def show_table(widget, df) -> None:
    """``df`` in a table in one update: 6 decimals, p-values in scientific notation, headers
    as text; tall enough for the header, up to 7 rows and a horizontal scroll bar (one row was
    clipped at 40 px + 34 a row), then it scrolls."""
    formats = {**number_formatters(df, 6), **{c: ScientificFormatter(precision=6)
                                               for c in P_COLUMNS if c in df}}
    if "ChrPos" in df:
        formats["ChrPos"] = NumberFormatter(format="0")
    with pn.io.hold():
        widget.param.update(value=df, titles=escaped_titles(df), formatters=formats,
                            height=min(320, 70 + 36 * len(df)))


class GwasView(Viewer):
    """Inputs, Run/Cancel with progress, and the scan's tables, plots and exports."""

    state = param.ClassSelector(class_=GwasState)

    def __init__(self, **params):
        params.setdefault("state", GwasState())
        super().__init__(**params)
        sp = self.state.param
        self.source = pn.widgets.RadioButtonGroup.from_param(sp.source, label="Files")
        self.files = pn.Row(*(
            pn.widgets.TextInput.from_param(getattr(sp, k), label=label, width=300,
                                            placeholder=hint)
            for k, label, hint in (
                ("bed", "PLINK fileset in the data directory", "e.g. cohort/chr_all"),
                ("pheno", "Phenotypes (PLINK text, CSV, Parquet)", "e.g. traits.csv"),
                ("covar", "Covariates (optional)", "empty: none"))), visible=False)
        self.simulate = pn.Row(
            pn.widgets.Toggle.from_param(sp.simulate, label="Simulate traits on the genotypes",
                                         width=260),
            pn.widgets.IntInput.from_param(sp.sim_traits, label="Traits", width=110),
            pn.widgets.FloatInput.from_param(sp.sim_h2, label="h2", step=0.1, width=90),
            pn.widgets.IntInput.from_param(sp.sim_causal, label="Causal SNPs", width=110),
            pn.widgets.IntInput.from_param(sp.seed, label="Seed", width=90))
        self.load_button = pn.widgets.Button(label="Load traits", width=140)
        self.load_button.on_click(self._on_load)
        self.trait_choice = pn.widgets.MultiChoice(label="Traits to scan (empty: all)", width=560,
                                                   options=[])
        self.trait_choice.param.watch(lambda e: setattr(self.state, "traits", list(e.new)),
                                      ["value"])
        self.kinship = pn.widgets.RadioButtonGroup.from_param(sp.kinship, label="Kinship")
        self.threshold = pn.widgets.FloatInput.from_param(
            sp.threshold, label="Keep rows with p <= (empty: all)", width=220)
        self.run_button = pn.widgets.Button(label="Run scan", color="primary", width=140)
        self.run_button.on_click(self._on_run)
        self.status = markdown("No scan yet: press **Run scan** (the bundled toy data: 500 "
                               "people, 10,000 SNPs, one trait).", sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [self.run_button],
                                cancelling="Cancelling after the current SNP block ...")
        self.h2 = table(css_classes=["gwas-h2-table"])
        self.top = table(css_classes=["gwas-top-hits"])
        self.plot_trait = pn.widgets.Select(label="Trait to plot", width=300)
        self.plot_trait.param.watch(self._draw_trait, ["value"])
        self.manhattan, self.qq, self.heatmap = (pn.pane.HoloViews() for _ in range(3))
        self.exports = pn.Row(*(pn.widgets.FileDownload(
            callback=self._safe(fn, label), filename=name, label=label, width=230)
            for label, name, fn in (
                ("Summary statistics (CSV)", "gwas_sumstats.csv", lambda r: r.sumstats_csv()),
                ("Plots (HTML)", "gwas_plots.html", self._plots_html),
                ("Scan spec (JSON)", "gwas_spec.json", lambda r: r.spec_json()),
                ("Python script (.py)", "gwas_scan.py", lambda r: r.python_script()))))
        # each result a page of its own tabs (app/shell/lazy_tab.py: only the open one is in the
        # browser), a new scan opening its hits: the three plots and two tables sent at once
        # were most of the 2.9 s between the scan's end and its results on the page
        self.pages = LazyTabs({
            "Hits and heritability": lambda: pn.Column(
                "### Heritability and calibration per trait", self.h2,
                "### Top hits across traits", self.top, sizing_mode="stretch_width"),
            "Manhattan and QQ": lambda: pn.Column(self.plot_trait,
                                                  pn.Row(self.manhattan, self.qq)),
            "Locus heatmap": lambda: pn.Column(self.heatmap),
            "Downloads": lambda: self.exports}, sizing_mode="stretch_width")
        self.results = pn.Column(self.pages.tabs, sizing_mode="stretch_width", visible=False)
        self.state.param.watch(self._on_source, ["source"])

    # ------------------------------------------------------------------------------------
    def _on_source(self, event) -> None:
        self.files.visible = event.new == SOURCES[1]

    async def _on_load(self, event=None) -> None:
        try:
            names = await in_thread(self.state.load_traits, name="survscan-gwas-traits")
        except (DataLoadError, engine.CohortError, OSError) as exc:
            notify("error", f"Cannot load the traits: {exc}", duration=0)
            return
        self.trait_choice.param.update(options=text_options(names),  # names as text
                                       value=list(self.state.traits))
        self.status.object = f"{len(names):,} trait(s) found."

    async def _on_run(self, event=None) -> None:
        await self.run_scan()

    async def run_scan(self) -> None:
        """Snapshot the settings, scan in a worker thread with progress and ETA; show it."""
        if self.runner.running:
            return
        try:
            job = self.state.job()
        except DataLoadError as exc:
            self.runner.refuse(f"Scan not run: {exc}", f"Cannot run the scan: {exc}")
            return

        def keep(run, p) -> str:
            self.show(run)
            for message in run.warnings:
                notify("warning", message, duration=0)
            return self._done_text(run)

        await self.runner.run(
            job.run, describe, notice="GWAS scan", failed="Scan failed", done=keep,
            thread="survscan-gwas",
            cancelled=lambda p: (f"Scan cancelled after {p.done} of {p.total} SNP blocks, "
                                 f"{p.elapsed:.1f} s; earlier results stay."))

    @staticmethod
    def _done_text(run) -> str:
        spec, s = run.result.spec, run.settings
        kept = ("every row kept" if s["threshold"] is None
                else f"rows with p <= {s['threshold']:g} kept")
        limit = (f" (more than {ROW_LIMIT:,} tests: the threshold was lowered)"
                 if spec["m"] * spec["t"] > ROW_LIMIT else "")
        return (f"Scan done in {run.elapsed:.2f} s: {spec['t']:,} trait(s) x {spec['m']:,} SNPs "
                f"on {spec['n']:,} people, kinship {s['kinship']}; {kept}{limit}.")

    def show(self, run) -> None:
        """Fill the tables and plots from a GwasRun (built first: a failure keeps the last)."""
        trait = run.traits[0]
        manhattan, qq = self.trait_plots(run, trait)
        summary = run.result.summary.sort_values("min_p", kind="stable")
        heatmap = locus_heatmap(run.result.frame, list(summary.index[:HEATMAP_TRAITS].astype(str)))
        self.state.run = run
        show_table(self.h2, run.h2_table())
        show_table(self.top, run.top_hits())
        self.plot_trait.param.update(options=run.traits, value=trait)
        self.manhattan.object, self.qq.object, self.heatmap.object = manhattan, qq, heatmap
        self.pages.tabs.active = 0
        self.results.visible = True

    @staticmethod
    def trait_plots(run, trait):
        """Manhattan and QQ plots of one trait of a GwasRun."""
        row = run.result.summary.loc[trait]
        rows = run.rows(trait)
        return (manhattan_plot(rows, trait, run.settings["threshold"]),
                qq_plot(rows, trait, int(row["tests"]), float(row["lambda_gc"])))

    def _draw_trait(self, *events) -> None:
        run, trait = self.state.run, self.plot_trait.value
        if run is not None and trait in run.traits:
            self.manhattan.object, self.qq.object = self.trait_plots(run, trait)

    def _plots_html(self, run) -> str:
        return plot_html((self.manhattan.object + self.qq.object + self.heatmap.object).cols(2),
                         "survscan GWAS")

    def _safe(self, fn, label):
        """A download callback: the export of the last scan, or a notification."""
        def callback():
            if self.state.run is None:
                notify("warning", f"{label}: run a scan first", duration=4000)
                return io.StringIO("")
            try:
                return io.StringIO(fn(self.state.run))
            except Exception as exc:  # an export that fails is a message
                notify("error", f"{label} failed: {exc}", duration=0)
                return io.StringIO("")
        return callback

    def __panel__(self):
        return pn.Column(
            "## GWAS: mixed-model scan of many traits (FaST-LMM's numbers)",
            self.source, self.files, self.simulate,
            pn.Row(self.load_button, self.trait_choice),
            pn.Row(pn.Column("Kinship", self.kinship), self.threshold),
            pn.Row(self.run_button, self.runner.cancel_button), self.runner.progress, self.status,
            self.results, sizing_mode="stretch_width")


def describe(p) -> str:
    """The scan's stage: reading, kinship and h2, then SNP blocks with an ETA."""
    if not p.total:
        return f"Reading the files and simulating ... {p.elapsed:.1f} s"
    if p.done == 0:
        return f"Kinship, eigendecomposition and h2 ... {p.elapsed:.1f} s"
    return (f"Scanning: SNP block {p.done} of {p.total}, elapsed {p.elapsed:.1f} s, "
            f"ETA {p.eta()}")
