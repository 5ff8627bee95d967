"""The proportional-hazards check of a kept Cox fit, shown inside Results: R's cox.zph table
(per covariate and global chi-square, df, p; a cut-point fit's intervals one term each),
beta(t) plots (scaled Schoenfeld residuals with
a smooth and its band) and, where PH fails, one click that adds a cut point at t to the
design (the time-varying coefficient feature) with the advice to refit.

Numbers from engine.ph_check (engine.ph_test, scaled_schoenfeld and ph_smooth in one pass over
the rows); the figure from figures.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.figures import beta_t_figure, save, svg_markup
from ..shell.widgets import (in_thread, markdown, notify, served, show, table, while_filled,
                             while_set, while_visible)

ALPHA = 0.05
MAX_AUTO = 20          # coefficients checked as soon as the fit is shown; more on request
AUTO_CELLS = 200_000   # ... and rows x coefficients (10^4 x 20: 0.1 s; 10^6 x 20: 4 s)
MAX_PANELS = 12        # beta(t) panels drawn (the smallest p first)
MAX_DOTS = 2_000       # scaled Schoenfeld residuals drawn per panel (a sample of the events)


def ph_tests(fit) -> dict:
    """The check's numbers without its figure (milliseconds for rossi): the cox.zph table, the
    smooths, the scaled Schoenfeld residuals, the terms by p; or {"error": message}."""
    try:
        check = engine.ph_check(fit.result)
    except Exception as exc:  # not a plain Cox fit, or the fit's data went away
        return {"error": str(exc)}
    zph = check.test.table
    order = zph.drop(index="GLOBAL").sort_values("p").index.tolist()
    return {"zph": zph, "smooth": check.smooth, "resid": check.residuals, "order": order}


def ph_figure(fit, numbers: dict) -> dict:
    """The beta(t) figure of ``ph_tests``' numbers and its SVG (the slow part: matplotlib, about
    0.3 s for rossi; drawn once, within the figure's own margins, as it competes for the CPU
    with the browser laying out the fit's results). No widget is touched, so a worker thread
    may draw it."""
    res, zph, smooth, order = fit.result, numbers["zph"], numbers["smooth"], numbers["order"]
    resid = numbers["resid"]
    if len(resid) > MAX_DOTS:    # the dots of 10^5 events made a figure of 10^6 SVG marks
        resid = resid.iloc[np.sort(np.random.default_rng(0).choice(len(resid), MAX_DOTS,
                                                                   replace=False))]
    names = [n for t in order for n in smooth["covariate"].unique()
             if n == t or n.startswith(f"{t}[")][:MAX_PANELS]
    ordered = pd.concat([smooth[smooth["covariate"] == n] for n in names])  # smallest p first
    figure = beta_t_figure(ordered, resid, res.coef, zph,
                           time_label=fit.spec["roles"].get("time") or "time")
    return {"figure": figure, "svg": svg_markup(figure, tight=False)}


def covariate_of(term: str, cut_points: dict) -> str:
    """The covariate a cox.zph term is of: ``fin`` for an interval of a cut-point fit's
    ``fin[20,inf)`` (more cut points are added to ``fin``), else the term itself."""
    return next((name for name in cut_points if term.startswith(f"{name}[")), term)


class PhCheck(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(css_classes=["ph-info"], sizing_mode="stretch_width")
        self.table = table(css_classes=["ph-table"])
        self.run = pn.widgets.Button(label="Check proportional hazards", visible=False)
        self.run.on_click(lambda event: self._check())
        self.figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                  css_classes=["ph-figure"])
        self.covariate = pn.widgets.Select(label="Covariate whose effect changes", width=240)
        self.cut = pn.widgets.FloatInput(label="Add a cut point at t", width=160, start=0)
        self.add = pn.widgets.Button(label="Add cut point (then refit)", color="primary")
        self.add.on_click(self._add_cut)
        self.action = pn.Column(
            markdown("Where PH fails, let the coefficient change at a time t: the fit then "
                     "estimates one coefficient before t and one after (the design's cut "
                     "points). Refit in the **Fit** tab after adding it."),
            pn.Row(self.covariate, self.cut, self.add), visible=False)
        # what has nothing to show yet is left out of the page (widgets.while_visible)
        self._parts = (while_visible(self.run), while_filled(self.table),
                       while_set(self.figure), while_visible(self.action))
        self.fit = None
        self.zph = None
        self._fig = None

    def show_fit(self, fit) -> None:
        """A kept fit was selected: check it now when it is small, else offer the button."""
        self.fit, self.zph, self._fig = fit, None, None
        self.table.value = pd.DataFrame()
        self.figure.object = None
        self.action.visible = False
        if fit is not None and fit.spec["options"].get("model") != "cox":
            self.info.object = (f"**{fit.name}** is a {fit.spec['options'].get('model')} fit: "
                                "the PH check (R's cox.zph) is for Cox fits.")
            self.run.visible = False
            return
        if fit is None:
            self.info.object = "No fit yet."
            self.run.visible = False
            return
        p, n = len(fit.result.coef), fit.result.n
        if p <= MAX_AUTO and n * p <= AUTO_CELLS:
            self.run.visible = False
            self._check(now=True)
        else:
            self.info.object = (f"{n:,} rows x {p} coefficients: the check takes a while; "
                                "press the button to run it.")
            self.run.visible = True

    def _check(self, now: bool = False) -> None:
        """The check of the selected fit.  A small fit's numbers at once (``now``:
        milliseconds, they go to the page with the fit's other results, in one patch), its
        beta(t) figure in a worker thread after the rest is on the page (the figure alone took
        1-2 s of the click-to-result time, app/shell/figures.py's SVG; the table arriving
        later too re-laid the whole page out in the browser).  A large fit's numbers (10^6
        rows x 20: about a minute) come from the worker thread too, the page usable meanwhile.
        In a script or a test, all at once."""
        fit = self.fit
        if fit is None:
            return
        numbers = ph_tests(fit) if now or not served() else None
        if numbers is not None:
            self._show(fit, numbers)
            if "error" in numbers:
                return
            if not served():
                self._show_figure(ph_figure(fit, numbers))
                return
        else:
            self.run.disabled = True
            self.info.object = "Checking proportional hazards (R's cox.zph) …"

        async def later():
            got = numbers
            try:
                if got is None:
                    got = await in_thread(ph_tests, fit, name="survscan-ph-check")
                    if self.fit is fit:
                        self._show(fit, got)
                if "error" in got:
                    return
                figure = await in_thread(ph_figure, fit, got, name="survscan-ph-check")
            finally:
                self.run.disabled = False
            if self.fit is fit:                 # still the fit shown
                self._show_figure(figure)
        pn.state.execute(later)

    def _show_figure(self, figure: dict) -> None:
        self._fig = figure["figure"]
        self.figure.object = figure["svg"]

    def _show(self, fit, numbers: dict) -> None:
        if "error" in numbers:
            self.info.object = (f"The PH check is not available for **{fit.name}**: "
                                f"{numbers['error']}")
            return
        zph, smooth = numbers["zph"], numbers["smooth"]
        self.zph = zph
        failing = [t for t in zph.index if t != "GLOBAL" and zph.loc[t, "p"] < ALPHA]
        glob = zph.loc["GLOBAL"]
        cuts = fit.spec["design"].get("cut_points") or {}
        self.info.object = (
            f"**Global test: chi-square = {glob['chisq']:.2f} on {int(glob['df'])} df, p = "
            f"{glob['p']:.4g}** (R's cox.zph, Kaplan-Meier time transform). "
            + (f"PH is doubtful (p < {ALPHA}) for: {', '.join(failing)}." if failing else
               f"No covariate has p < {ALPHA}.")
            + (" Each interval of a coefficient with cut points is a term of its own, tested "
               "on the fit's (start, stop] episodes (R's cox.zph of a survSplit fit)."
               if cuts else ""))
        shown = zph.reset_index()
        shown["PH"] = ["doubtful" if p < ALPHA else "ok" for p in shown["p"]]
        show(self.table, shown, 4)
        order = [covariate_of(t, cuts) for t in numbers["order"]]
        offered = list(dict.fromkeys(t for t in order if t in self.store.covariates))
        self.covariate.options = offered
        if offered:
            first = covariate_of(failing[0], cuts) if failing else None
            self.covariate.value = first if first in offered else offered[0]
            grid = smooth.loc[smooth["covariate"] == smooth["covariate"].iloc[0], "time"]
            self.cut.value = float(f"{grid.iloc[len(grid) // 2]:.3g}")   # mid follow-up
        self.action.visible = bool(offered)

    def _add_cut(self, event=None) -> None:
        s, name, t = self.store, self.covariate.value, self.cut.value
        if not name or t is None or not t > 0:
            notify("warning", "choose a covariate and a time t > 0 for the cut point")
            return
        if name not in s.covariates:
            notify("warning", f"{name} is not a covariate of the current design")
            return
        cuts = sorted({*map(float, s.cut_points.get(name, [])), float(t)})
        s.cut_points = {**s.cut_points, name: cuts}
        message = (f"Cut point at {t:g} added for {name}: refit in the Fit tab to estimate "
                   f"its effect before and after {t:g}.")
        self.info.object = message
        notify("success", message)

    def files(self) -> dict[str, bytes]:
        """The report folder's PH files: the cox.zph table (CSV) and beta(t) (PNG, SVG)."""
        if self.zph is None:
            return {}
        out = {"ph_test.csv": self.zph.reset_index().to_csv(index=False).encode()}
        if self._fig is not None:
            out["beta_t.png"] = save(self._fig, "png")
            out["beta_t.svg"] = save(self._fig, "svg")
        return out

    def __panel__(self):
        return pn.Column(self.info, *self._parts, sizing_mode="stretch_width")
