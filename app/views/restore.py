"""The offer to reopen the user's last analysis (app/autosave.py), shown above the tabs."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

from .. import autosave
from ..loading import DataLoadError
from ..store import Store
from ._common import markdown, notify


class RestoreOffer(Viewer):
    """"Reopen your last analysis?" with Reopen and Dismiss; hidden once answered."""

    store = param.ClassSelector(class_=Store)
    record = param.Dict(default=None, allow_None=True)
    user = param.String(default=None, allow_None=True)

    def __init__(self, **params):
        super().__init__(**params)
        self.text = markdown(f"**Your last analysis:** {autosave.describe(self.record)}"
                             if self.record else "", sizing_mode="stretch_width")
        self.reopen = pn.widgets.Button(label="Reopen it", color="primary", width=120)
        self.reopen.on_click(self._reopen)
        self.dismiss = pn.widgets.Button(label="Dismiss", width=100)
        self.dismiss.on_click(lambda event: self._hide())
        self.row = pn.Row(self.text, self.reopen, self.dismiss, visible=self.record is not None,
                          css_classes=["restore-offer"], sizing_mode="stretch_width")

    def _reopen(self, event=None) -> None:
        try:
            autosave.restore(self.store, self.record, self.user)
        except (DataLoadError, ValueError) as exc:
            notify("error", f"Cannot reopen the last analysis: {exc}", duration=0)
            return
        finally:
            self._hide()
        notify("success", f"Reopened {self.store.source.get('label')}", duration=3000)

    def _hide(self) -> None:
        self.row.visible = False

    def __panel__(self):
        return self.row
