"""The Fit tab's bootstrap: percentile intervals of the hazard ratios from resampled subjects
(engine.bootstrap), beside the model-based ones, for the design as it is now."""

from __future__ import annotations

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

from ..data.store import Store
from ..shell.widgets import markdown, show, table, while_filled
from .state import Workbench


class BootstrapView(Viewer):
    """The last bootstrap, shown while the design is the one it resampled."""

    store = param.ClassSelector(class_=Store)
    workbench = param.ClassSelector(class_=Workbench)

    def __init__(self, **params):
        super().__init__(**params)
        self.replicates = pn.widgets.IntInput.from_param(
            self.workbench.param.bootstrap_replicates, label="Bootstrap replicates", width=160)
        self.button = pn.widgets.Button(label="Bootstrap intervals", width=180)
        self.info = markdown(sizing_mode="stretch_width", css_classes=["bootstrap-info"])
        self.table = table(css_classes=["bootstrap-table"])
        self.body = while_filled(self.table)  # in the browser only while it has rows
        self.workbench.param.watch(self._draw, ["bootstrap"])
        self.store.param.watch(self._draw, ["data_version", "time", "start", "event",
                                            "event_codes", "covariates", "strata", "id",
                                            "weights", "cut_points", "model", "ties", "cause",
                                            "penalty", "strength", "unpenalized", "forms",
                                            "interactions"])
        self._draw()

    def _draw(self, *events) -> None:
        run = self.workbench.bootstrap
        fresh = run is not None and run.spec == self.store.spec()
        if not fresh:
            self.table.value = pd.DataFrame()
            self.info.object = ("**Bootstrap intervals** refit the design on subjects drawn "
                                "with replacement (seed 0) and give percentile 95% intervals "
                                "of each hazard ratio beside the model-based ones.")
            return
        res = run.result
        left = f"; {res.no_events} replicate(s) drew no event and are left out" \
            if res.no_events else ""
        self.info.object = (f"**{run.name}** of this design ({res.spec['penalty']}, "
                            f"{res.spec['ties']} ties): percentile {res.level:.0%} intervals "
                            f"in {res.timings['total']:.2f} s{left}.")
        show(self.table, run.table(), 4)

    def __panel__(self):
        return pn.Column(pn.Row(self.replicates, self.button), self.info, self.body,
                         sizing_mode="stretch_width")
