"""Where the SCCS page's data come from: a bundled R SCCS dataset, a CSV upload (raw case
histories or eras), a simulated multi-drug set, or the Eunomia CDM; and a preview of it.
A file or setting that cannot be read is a notification; the loaded data stay."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError, read_upload
from ..shell import config
from ..shell.widgets import in_thread, markdown, newest_file, notify, show, table
from .state import SAMPLE_DESIGNS, SccsState

LAYOUT_LABELS = {"Raw case histories (one row per event)": "cases",
                 "Prepared eras (one row per era)": "eras"}


class SccsSources(Viewer):
    """One tab per source, then the data line and a preview of the loaded rows."""

    state = param.ClassSelector(class_=SccsState)

    def __init__(self, **params):
        super().__init__(**params)
        self.sample = pn.widgets.Select(label="Bundled R SCCS dataset",
                                        options=list(SAMPLE_DESIGNS), value="itpdat", width=220)
        self.open_sample = pn.widgets.Button(label="Open dataset", color="primary", width=140)
        self.open_sample.on_click(self._on_sample)
        self.file = pn.widgets.FileDropper(multiple=False, chunk_size=4_000_000,
                                           max_file_size=f"{config.max_upload_mb():g}MB",
                                           accepted_filetypes=[".csv", ".txt", "text/csv"])
        self.file.param.watch(self._on_file, "value")
        self.file_layout = pn.widgets.RadioButtonGroup(options=list(LAYOUT_LABELS),
                                                       value=list(LAYOUT_LABELS)[0])
        self.sim = {"cases": pn.widgets.IntInput(label="Cases", value=2000, start=1, width=120),
                    "drugs": pn.widgets.IntInput(label="Drugs", value=40, start=1, width=120),
                    "seed": pn.widgets.IntInput(label="Seed", value=1, start=0, width=100)}
        self.simulate = pn.widgets.Button(label="Simulate", color="primary", width=120)
        self.simulate.on_click(self._on_simulate)
        self.eunomia = pn.widgets.Button(label="Use the Eunomia CDM", color="primary", width=200)
        self.eunomia.on_click(self._on_eunomia)
        self.tabs = pn.Tabs(
            ("R SCCS data", pn.Column(
                markdown("\n".join(f"- **{k}**: {v['about']}"
                                   for k, v in SAMPLE_DESIGNS.items())),
                pn.Row(self.sample, self.open_sample))),
            ("CSV upload", pn.Column(self.file_layout, self.file, markdown(
                "Raw case histories as R SCCS holds them: one row per event with the case "
                "id, observation start and end, the event day and exposure start (and end) "
                "days; or eras with case, length, event count and 0/1 exposure columns."))),
            ("Simulated drugs", pn.Column(pn.Row(*self.sim.values(), self.simulate), markdown(
                "engine.simulate_sccs: many drugs with skewed prevalence and a few true "
                "signals, for the penalised multi-drug fit and its selection frequencies."))),
            ("Eunomia CDM", pn.Column(self.eunomia, markdown(
                "engine.cdm.sccs_study on the bundled Eunomia GiBleed CDM: drug eras of the "
                "exposure ingredient, outcomes from condition occurrences."))),
            dynamic=False, sizing_mode="stretch_width")
        self.data_line = markdown("No data yet: open a dataset.", sizing_mode="stretch_width",
                                  css_classes=["sccs-data-line"])
        self.preview = table(height=200, visible=False)
        self.state.param.watch(self._on_data, ["data_version"])

    def _on_data(self, *events) -> None:
        s = self.state
        self.data_line.object = f"**Data:** {s.source.get('label', 'none')}" + (
            f" — {len(s.frame):,} rows, {len(s.columns)} columns ({s.layout})"
            if s.frame is not None else "")
        show(self.preview, s.frame.head(50) if s.frame is not None else s.frame)
        self.preview.visible = s.frame is not None

    def _guard(self, action, what: str) -> bool:
        """Run a state change; a bad input is a notification, the state is kept."""
        try:
            action()
        except (DataLoadError, engine.CohortError, ValueError) as exc:
            notify("error", f"{what}: {exc}", duration=0)
            return False
        return True

    def _on_sample(self, event=None) -> None:
        if self._guard(lambda: self.state.load_sample(self.sample.value), "Open dataset"):
            notify("success", f"Opened {self.sample.value}", duration=3000)

    async def _on_file(self, event=None) -> None:
        """Read the upload in a worker thread (a big CSV never holds the event loop)."""
        dropped = newest_file(self.file.value)
        if dropped is None:
            return
        filename, data = dropped
        layout = LAYOUT_LABELS[self.file_layout.value]
        try:
            df = await in_thread(read_upload, filename, data, name="survscan-sccs-upload")
        except (DataLoadError, ValueError) as exc:
            notify("error", f"Opening {filename}: {exc}", duration=0)
            return
        if self._guard(lambda: self.state.load_frame(df, filename, layout),
                       f"Opening {filename}"):
            notify("success", f"Opened {filename}: check the columns below", duration=3000)

    def _on_simulate(self, event=None) -> None:
        values = [w.value for w in self.sim.values()]
        if None in values:
            notify("error", "Simulation: fill in cases, drugs and seed", duration=0)
            return
        self._guard(lambda: self.state.use_simulated(*values), "Simulation")

    def _on_eunomia(self, event=None) -> None:
        self._guard(self.state.use_eunomia, "Eunomia")

    def __panel__(self):
        return pn.Column(self.tabs, self.data_line, self.preview, sizing_mode="stretch_width")
