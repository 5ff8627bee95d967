"""The penalty on the scale of lambda_max: the words the Design and Fit tabs show, and the Fit
tab's regularisation path (plot and table) with the chosen lambda marked."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

from ..data.store import Store
from ..shell.widgets import markdown, show, table
from .path_plot import path_plot
from .state import Workbench


def penalty_words(s: Store) -> str:
    """The penalty as the user set it, on the scale of lambda_max when it is known."""
    if s.penalty == "none":
        return "none"
    top = s.known_lambda_max()
    if s.strength_as == "lambda":
        scale = f" = {s.strength / top:.3g} x lambda_max {top:.4g}" if top else ""
        return f"{s.penalty}, lambda {s.strength:.4g}{scale}"
    if top is None:
        return (f"{s.penalty} at {s.strength_fraction:g} x lambda_max (lambda_max of this "
                "design is computed when you fit or draw the path)")
    return (f"{s.penalty}, lambda {s.scaled_strength():.4g} = {s.strength_fraction:g} x "
            f"lambda_max {top:.4g}")


class PathView(Viewer):
    """The last path of this design: coefficients and deviance ratio against lambda."""

    store = param.ClassSelector(class_=Store)
    workbench = param.ClassSelector(class_=Workbench)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.plot = pn.pane.HoloViews()
        self.table = table(height=200)
        # shown and hidden as one column: toggling ``visible`` on a HoloViews pane that holds
        # a Layout sends Panel's ``design`` to Bokeh's GridPlot, which has none (AttributeError)
        self.body = pn.Column(self.plot, self.table, visible=False,
                              sizing_mode="stretch_width")
        self.workbench.param.watch(self._draw, ["path"])
        self.store.param.watch(self._draw, [
            "strength", "strength_fraction", "strength_as", "lambda_max", "penalty",
            "data_version", "time", "start", "event", "event_codes", "covariates", "strata",
            "id", "weights", "cut_points", "model", "ties", "cause", "unpenalized"])
        self._draw()

    def _draw(self, *events) -> None:
        s = self.store
        run = self.workbench.path
        fresh = run is not None and run.key == s.penalty_key()
        self.info.object = f"**Penalty:** {penalty_words(s)}." + (
            "" if fresh else " **Draw the path** shows the fits from lambda_max down to "
                             "1/1000 of it (as many as the lambda grid points).")
        self.body.visible = fresh
        if not fresh:
            return
        chosen = s.chosen_lambda()
        self.plot.object = path_plot(run.result, chosen, s.penalty)
        show(self.table, run.result.summary, 4)

    def __panel__(self):
        return pn.Column("### Penalty scale and regularisation path", self.info, self.body,
                         sizing_mode="stretch_width")
