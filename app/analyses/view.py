"""The sidebar's Analyses box (name the current analysis, switch between the session's named
analyses, delete one, download the current one as a .survscan file) and, on the Export tab,
the download and the opener of such a file."""

from __future__ import annotations

import io

import panel as pn
import param
from panel.viewable import Viewer

from ..data.loading import DataLoadError
from ..data.store import Store
from ..shell.bounded_dropper import BoundedFileDropper
from ..shell.job_slots import SLOTS
from ..shell.widgets import in_thread, markdown, newest_file, notify
from . import analysis_file
from .named import NamedAnalyses
from .reopen import rebuild


class AnalysesView(Viewer):
    """Save as, Switch, Delete, Download and Open for the session's named analyses."""

    store = param.ClassSelector(class_=Store)
    analyses = param.ClassSelector(class_=NamedAnalyses)

    def __init__(self, **params):
        super().__init__(**params)
        self.current = markdown(sizing_mode="stretch_width")
        # the pair fits the 230 px under the sidebar's padding (150 + 80 and their margins ran
        # past its edge, "Save as" clipped)
        self.name_input = pn.widgets.TextInput(placeholder="a name, e.g. rossi by fin", width=135)
        self.save = pn.widgets.Button(label="Save as", width=75)
        self.save.on_click(self._save_as)
        self.choice = pn.widgets.Select(width=230)
        self.switch = pn.widgets.Button(label="Switch to it", width=110)
        self.switch.on_click(lambda e: self._act(self.analyses.switch, "Switched to"))
        self.delete = pn.widgets.Button(label="Delete it", width=100)
        self.delete.on_click(lambda e: self._act(self.analyses.delete, "Deleted"))
        self.download = pn.widgets.FileDownload(callback=self._file, label="Download .survscan",
                                                filename="analysis_1.survscan", width=230)
        self.download_copy = pn.widgets.FileDownload(
            callback=self._file, label="Download .survscan", filename=self.download.filename,
            width=230)
        self.opener = BoundedFileDropper(multiple=False,  # any type: the content is checked
                                         layout="compact", width=230)
        self.opener.param.watch(self._open, "value")
        self.opener.param.watch(lambda e: notify("error", e.new, duration=0), "refused")
        self._opened = None
        self.store.param.watch(lambda e: self._refresh(), "data_version")  # a reopened autosave
        self._refresh()

    def _refresh(self) -> None:
        a = self.analyses
        self.current.object = f"**Analysis:** {a.current}"
        self.choice.options = a.names
        self.choice.value = a.current
        self.download.filename = analysis_file.file_name(a.current)
        self.download_copy.filename = self.download.filename

    def _save_as(self, event=None) -> None:
        self._act(lambda name: self.analyses.save_as(name), "Saved as", self.name_input.value)
        self.name_input.value = ""

    def _act(self, action, done: str, name: str | None = None) -> None:
        name = self.choice.value if name is None else name
        try:
            action(name or "")
        except ValueError as exc:
            notify("error", str(exc), duration=0)
            return
        self._refresh()
        notify("success", f"{done} {name.strip()}", duration=3000)

    def _file(self):
        """The current analysis as .survscan bytes (a download never shows a traceback)."""
        try:
            return io.BytesIO(analysis_file.write(analysis_file.capture(
                self.store, self.analyses.workbench, self.analyses.omop,
                self.analyses.current)))
        except Exception as exc:
            notify("error", f"The analysis file could not be written: {exc}", duration=0)
            return io.BytesIO(b"")

    async def _open(self, event=None) -> None:
        dropped = newest_file(self.opener.value)
        if dropped is None or dropped == self._opened:
            return  # nothing, or a removal re-sent the file already opened
        self._opened = dropped
        filename, data = dropped
        await self.open_bytes(filename, data)

    async def open_bytes(self, filename: str, data: bytes) -> bool:
        """Read a .survscan file and refit its kept fits in a worker thread, then show it as a
        new named analysis (the current one stays under its name)."""
        self.opener.loading = True
        try:
            staged, bench, omop, differ, name = await in_thread(
                _read_and_rebuild, filename, data, name="survscan-open-analysis")
        except (DataLoadError, ValueError) as exc:
            notify("error", f"Cannot open {filename}: {exc}", duration=0)
            return False
        except Exception as exc:  # never a traceback on the page
            notify("error", f"Opening {filename} failed: {type(exc).__name__}: {exc}",
                   duration=0)
            return False
        finally:
            self.opener.loading = False
        with pn.io.hold(freeze=True):  # the opened analysis reaches the page as one patch
            shown = self.analyses.add(name, staged, bench, omop)
            self._refresh()
        for fit in differ:
            notify("warning", f"{fit}: the refit differs from the saved numbers", duration=0)
        notify("success", f"Opened {shown}: {staged.source.get('label')}, "
                          f"{len(bench.fits)} kept fit(s) refitted", duration=4000)
        return True

    def __panel__(self):
        """The sidebar part: name, switch, delete, download."""
        return pn.Column(
            "#### Analyses", self.current,
            pn.Row(self.name_input, self.save),
            self.choice, pn.Row(self.switch, self.delete),
            self.download, css_classes=["analyses-box"], sizing_mode="stretch_width")

    @property
    def files(self):
        """The Export tab's part: download the analysis, open a saved one (below the Data
        tab's file dropper, which stays the page's first file input)."""
        return pn.Column(
            "### Save and reopen the whole analysis",
            markdown("One .survscan file holds the data source (an upload itself), the roles, "
                     "design, options and kept fits; opening it refits the fits and adds it "
                     "to the sidebar's analyses.", sizing_mode="stretch_width"),
            pn.Row(self.download_copy, self.opener), css_classes=["analysis-files"],
            sizing_mode="stretch_width")


def _read_and_rebuild(filename, data):
    analysis = analysis_file.read(data, filename)
    with SLOTS.slot():
        staged, bench, omop, differ = rebuild(analysis)
    return staged, bench, omop, differ, analysis.name
