"""Covariate-adjusted curves of a kept fit by its treatment, shown inside Results: each
person's predicted survival (Fine-Gray: cumulative incidence) with the treatment set to each
level, averaged over the cohort (the g-formula of engine.adjusted_curves, delta-method bands
for Cox), and the adjusted difference and ratio at a chosen time; for a Poisson fit the
adjusted incidence rates (engine.adjusted_rates), their difference and ratio."""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.figures import adjusted_figure, save
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, show, table, while_filled, while_visible
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


def _poisson(fit) -> bool:
    return fit is not None and fit.spec["options"].get("model") == "poisson"


class AdjustedView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.at = pn.widgets.FloatInput(label="Difference at time", width=180, start=0)
        self.draw = pn.widgets.Button(label="Draw adjusted curves", width=200)
        self.draw.on_click(self._on_click)
        self.status = markdown(sizing_mode="stretch_width")
        # the curves of 10^6 people take 2 s: a worker thread, the server free meanwhile
        self.runner = JobRunner(self.status, [self.draw])
        # the pane stays visible inside a Column that is shown and hidden: a HoloViews pane
        # made visible after its object was set failed in the served app (Bokeh: "unexpected
        # attribute 'design' to figure")
        self.plot = pn.pane.HoloViews()
        self.figure = pn.Column(self.plot, visible=False)
        self.contrasts = table(css_classes=["adjusted-table"])
        self.rates = table(css_classes=["adjusted-rates-table"])      # a Poisson fit's
        # the figure and the tables join the page once drawn (widgets.while_visible)
        self._parts = (while_visible(self.figure), while_filled(self.rates),
                       while_filled(self.contrasts))
        self._fit = None
        self.drawn = None          # (engine.adjusted_curves' result, treatment, at) on screen

    def show_fit(self, fit) -> None:
        """The fit shown in Results: clear the last curves, say whether they can be drawn."""
        self._fit, self.drawn = fit, None
        self.plot.object, self.figure.visible = None, False
        self.contrasts.value = self.rates.value = pd.DataFrame()
        self.status.object = ""
        treatment, why = treatment_of(fit)
        self.draw.disabled = treatment is None
        rates = _poisson(fit)
        self.at.visible = not rates
        self.draw.name = "Compute adjusted rates" if rates else "Draw adjusted curves"
        if treatment is None:
            self.info.object = why
            return
        if rates:
            self.info.object = (f"Each row's rate with **{treatment}** set to each level, "
                                "averaged over this fit's person-time (direct standardisation, "
                                "the g-formula for rates): the other covariates' distribution "
                                "held fixed; events per 1,000 units of person-time.")
            return
        self.at.value = float(np.median(curve_times(fit.result)))
        self.info.object = (f"Each person's predicted curve with **{treatment}** set to each "
                            "level, averaged over this fit's cohort (direct standardisation, "
                            "the g-formula): the other covariates' distribution held fixed.")

    async def _on_click(self, event=None) -> None:
        await self.compute()

    async def compute(self) -> None:
        """The adjusted curves of the shown fit by its treatment, by the page's job runner."""
        fit = self._fit
        if self.runner.running:
            return
        treatment, why = treatment_of(fit)
        if treatment is None:
            self.runner.refuse(f"Adjusted curves: {why}")
            return
        if _poisson(fit):
            await self._rates(fit, treatment)
            return
        at = self.at.value
        times = curve_times(fit.result)
        if at is not None:
            times = np.unique(np.append(times, float(at)))

        def done(curves, progress) -> str:
            if self._fit is not fit:                 # another fit was shown meanwhile
                return "Adjusted curves of an earlier fit: not shown."
            self.drawn = (curves, treatment, at)
            self.plot.object = adjusted_plot(curves.curves, treatment, at)
            self.figure.visible = True
            c = curves.contrasts
            show(self.contrasts, c[np.isclose(c["time"], at)] if at is not None else c, 4)
            return f"Adjusted curves of **{fit.name}** by {treatment} in {progress.elapsed:.2f} s."

        await self.runner.run(
            lambda cancel, progress: engine.adjusted_curves(fit.result, treatment, times=times),
            lambda p: f"Averaging each person's curve … {p.elapsed:.1f} s",
            notice="Adjusted curves", done=done, cancelled=lambda p: "Cancelled.",
            thread="survscan-adjusted")

    async def _rates(self, fit, treatment) -> None:
        """engine.adjusted_rates of the shown Poisson fit, by the page's job runner."""
        def done(out, progress) -> str:
            if self._fit is not fit:
                return "Adjusted rates of an earlier fit: not shown."
            self.drawn = (out, treatment, None)
            per = f"per {out.per:,g}"
            show(self.rates, out.rates.reset_index().rename(columns={
                "level": treatment, "rate": f"adjusted rate {per}", "lower": "lower 95%",
                "upper": "upper 95%"}), 4)
            show(self.contrasts, out.contrasts.rename(columns={
                "level": treatment, "difference": f"rate difference {per}",
                "lower": "lower 95%", "upper": "upper 95%", "ratio": "rate ratio",
                "ratio_lower": "ratio lower 95%", "ratio_upper": "ratio upper 95%"}), 4)
            return f"Adjusted rates of **{fit.name}** by {treatment} in {progress.elapsed:.2f} s."

        await self.runner.run(
            lambda cancel, progress: engine.adjusted_rates(fit.result, treatment),
            lambda p: f"Standardising the rates … {p.elapsed:.1f} s", notice="Adjusted rates",
            done=done, cancelled=lambda p: "Cancelled.", thread="survscan-adjusted")

    def files(self) -> dict[str, bytes]:
        """The report folder's adjusted curves (CSV, PNG, SVG) and contrasts, once drawn (a
        Poisson fit's adjusted rates and contrasts, CSV)."""
        if self.drawn is None:
            return {}
        curves, treatment, at = self.drawn
        if _poisson(self._fit):
            return {"adjusted_rates.csv": curves.rates.to_csv().encode(),
                    "adjusted_rate_contrasts.csv": curves.contrasts.to_csv(index=False).encode()}
        figure = adjusted_figure(curves.curves, treatment, at,
                                 time_label=self._fit.spec["roles"].get("time") or "time")
        return {"adjusted_curves.csv": curves.curves.to_csv(index=False).encode(),
                "adjusted_contrasts.csv": curves.contrasts.to_csv(index=False).encode(),
                "adjusted_curves.png": save(figure, "png"),
                "adjusted_curves.svg": save(figure, "svg")}

    def __panel__(self):
        return pn.Column(self.info, pn.Row(self.at, self.draw),
                         pn.Row(self.runner.cancel_button, self.runner.progress), self.status,
                         *self._parts, sizing_mode="stretch_width")
