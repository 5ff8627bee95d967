"""The offer to reopen the user's last analysis (autosave.py), shown above the tabs."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

from ..data.loading import DataLoadError
from ..shell.job_slots import SLOTS
from ..shell.widgets import in_thread, markdown, notify
from .analysis_file import Analysis
from .named import NamedAnalyses
from .reopen import rebuild


class RestoreOffer(Viewer):
    """"Reopen your last analysis?" with Reopen and Dismiss; hidden once answered. Reopening
    refits the kept fits in a worker thread (in a server-wide job slot)."""

    analyses = param.ClassSelector(class_=NamedAnalyses)
    record = param.ClassSelector(class_=Analysis, default=None, allow_None=True)

    def __init__(self, **params):
        super().__init__(**params)
        if self.record is None:  # nothing to offer: an empty slot, not the offer's widgets
            self.row = pn.Row(visible=False)
            return
        self.text = markdown(f"**Your last analysis:** {self.record.describe()}"
                             if self.record else "", sizing_mode="stretch_width")
        self.reopen = pn.widgets.Button(label="Reopen it", color="primary", width=120)
        self.reopen.on_click(self._reopen)
        self.dismiss = pn.widgets.Button(label="Dismiss", width=100)
        self.dismiss.on_click(lambda event: self._hide())
        self.row = pn.Row(self.text, self.reopen, self.dismiss, css_classes=["restore-offer"],
                          sizing_mode="stretch_width")

    async def _reopen(self, event=None) -> None:
        await self.reopen_now()

    async def reopen_now(self) -> bool:
        """Rebuild the saved analysis (data, roles, refitted fits) and show it."""
        self.row.loading = True
        try:
            staged, bench, omop, differ = await in_thread(_rebuild_in_slot, self.record,
                                                          name="survscan-reopen")
        except (DataLoadError, ValueError) as exc:
            notify("error", f"Cannot reopen the last analysis: {exc}", duration=0)
            return False
        except Exception as exc:  # never a traceback on the page
            notify("error", f"Reopening failed: {type(exc).__name__}: {exc}", duration=0)
            return False
        finally:
            self.row.loading = False
            self._hide()
        with pn.io.hold(freeze=True):  # the reopened analysis reaches the page as one patch
            self.analyses.add(self.record.name, staged, bench, omop, keep_current=False)
        for name in differ:
            notify("warning", f"{name}: the refit differs from the saved numbers", duration=0)
        notify("success", f"Reopened {staged.source.get('label')} with "
                          f"{len(bench.fits)} kept fit(s)", duration=3000)
        return True

    def _hide(self) -> None:
        self.row.visible = False

    def __panel__(self):
        return self.row


def _rebuild_in_slot(analysis):
    with SLOTS.slot():
        return rebuild(analysis)
