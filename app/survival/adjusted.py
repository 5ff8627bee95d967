"""Covariate-adjusted curves of a kept fit by its treatment, shown inside Results: each
person's predicted survival (Fine-Gray: cumulative incidence) with the treatment set to each
level, averaged over the cohort (the g-formula of engine.adjusted_curves, delta-method bands
for Cox), and the adjusted difference and ratio at a chosen time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.figures import adjusted_figure, save
from ..shell.widgets import markdown, notify, show, table, while_filled, while_visible
from .plots import adjusted_plot

MAX_TIMES = 120        # time points of the drawn curves (event times, or their quantiles)


def curve_times(res) -> np.ndarray:
    """The event times of the fit's cohort, or MAX_TIMES of their quantiles when more."""
    cohort = res.problem.cohort
    t = np.unique(np.asarray(cohort.time)[np.asarray(cohort.event) > 0])
    if t.size > MAX_TIMES:
        t = np.unique(np.quantile(t, np.linspace(0, 1, MAX_TIMES)))
    return t


def treatment_of(fit) -> tuple[str | None, str]:
    """(the treatment covariate of ``fit``, '') or (None, why the curves cannot be drawn)."""
    if fit is None:
        return None, "No fit yet."
    treatment = fit.spec["roles"].get("treatment")
    if not treatment:
        return None, ("Set the **Treatment / grouping** column on the Data tab (a covariate) "
                      "and fit again to draw adjusted curves by it.")
    names = list(fit.result.coef.index)
    formula = getattr(fit.result, "formula", None)
    if treatment not in names and formula is not None and treatment in formula.variables:
        return None, (f"**{treatment}** enters this fit as a spline, polynomial or "
                      "categorical term: adjusted curves by treatment need a linear treatment "
                      "term (set it to linear on the Design tab and fit again).")
    if treatment not in names and not any(n.startswith(treatment + "[") for n in names):
        return None, (f"**{treatment}** is not a covariate of this fit (a stratum, or left "
                      "out): adjusted curves need its coefficient.")
    return treatment, ""


class AdjustedView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.at = pn.widgets.FloatInput(label="Difference at time", width=180, start=0)
        self.draw = pn.widgets.Button(label="Draw adjusted curves", width=200)
        self.draw.on_click(lambda event: self._draw())
        # the pane stays visible inside a Column that is shown and hidden: a HoloViews pane
        # made visible after its object was set failed in the served app (Bokeh: "unexpected
        # attribute 'design' to figure")
        self.plot = pn.pane.HoloViews()
        self.figure = pn.Column(self.plot, visible=False)
        self.contrasts = table(css_classes=["adjusted-table"])
        # the figure and the table join the page once drawn (widgets.while_visible)
        self._parts = (while_visible(self.figure), while_filled(self.contrasts))
        self._fit = None
        self.drawn = None          # (engine.adjusted_curves' result, treatment, at) on screen

    def show_fit(self, fit) -> None:
        """The fit shown in Results: clear the last curves, say whether they can be drawn."""
        self._fit, self.drawn = fit, None
        self.plot.object, self.figure.visible = None, False
        self.contrasts.value = pd.DataFrame()
        treatment, why = treatment_of(fit)
        self.draw.disabled = treatment is None
        if treatment is None:
            self.info.object = why
            return
        self.at.value = float(np.median(curve_times(fit.result)))
        self.info.object = (f"Each person's predicted curve with **{treatment}** set to each "
                            "level, averaged over this fit's cohort (direct standardisation, "
                            "the g-formula): the other covariates' distribution held fixed.")

    def _draw(self) -> None:
        fit = self._fit
        treatment, why = treatment_of(fit)
        if treatment is None:
            notify("warning", why)
            return
        at = self.at.value
        times = curve_times(fit.result)
        if at is not None:
            times = np.unique(np.append(times, float(at)))
        try:
            curves = engine.adjusted_curves(fit.result, treatment, times=times)
        except (ValueError, TypeError) as exc:        # engine.CohortError is a ValueError
            notify("error", f"Adjusted curves: {exc}", duration=0)
            return
        self.drawn = (curves, treatment, at)
        self.plot.object = adjusted_plot(curves.curves, treatment, at)
        self.figure.visible = True
        c = curves.contrasts
        show(self.contrasts, c[np.isclose(c["time"], at)] if at is not None else c, 4)

    def files(self) -> dict[str, bytes]:
        """The report folder's adjusted curves (CSV, PNG, SVG) and contrasts, once drawn."""
        if self.drawn is None:
            return {}
        curves, treatment, at = self.drawn
        figure = adjusted_figure(curves.curves, treatment, at,
                                 time_label=self._fit.spec["roles"].get("time") or "time")
        return {"adjusted_curves.csv": curves.curves.to_csv(index=False).encode(),
                "adjusted_contrasts.csv": curves.contrasts.to_csv(index=False).encode(),
                "adjusted_curves.png": save(figure, "png"),
                "adjusted_curves.svg": save(figure, "svg")}

    def __panel__(self):
        return pn.Column(self.info, pn.Row(self.at, self.draw), *self._parts,
                         sizing_mode="stretch_width")
