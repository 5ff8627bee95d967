"""Splines and interactions of a kept fit, inside Results: the joint Wald test of each term with
several columns (a spline's basis, a polynomial, an interaction, a factor's levels;
engine.wald_test), the test of linearity of a restricted cubic spline (rms's anova
"Nonlinear") and, for each spline and polynomial, the hazard ratio against its variable with a
pointwise band (engine.effect_curve, rms's Predict), relative to the variable's median.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
from panel.viewable import Viewer

import engine

from ..shell.choices import RATIOS
from ..shell.figures import effect_figure, save
from ..shell.widgets import markdown, show, table, while_filled
from .plots import effect_plot

GRID = 101   # values of the exposure at which a curve is drawn


def wald_table(res) -> pd.DataFrame:
    """term, chi2, df, p of every formula term with several columns or an interaction; after
    a restricted cubic spline, its test of linearity (all columns but the linear first).  A
    term's columns the cohort left out (a level pair no row has, a duplicate) are not tested,
    as R's anova drops aliased coefficients."""
    terms, rows = [], []
    for term, columns in res.formula.terms.items():
        kept = [c for c in columns if c in res.coef.index]
        if kept and (len(columns) > 1 or ":" in term):
            terms.append(term)
            rows.append(engine.wald_test(res, names=kept))
        if term.startswith("rcs(") and len(kept) > 1:
            terms.append(f"{term} nonlinear")
            rows.append(engine.wald_test(res, names=[c for c in columns[1:] if c in kept]))
    return pd.DataFrame({"term": terms, "chi2": [r["statistic"] for r in rows],
                         "df": [int(r["df"]) for r in rows], "p": [r["p"] for r in rows]})


def curve_terms(res) -> dict[str, str]:
    """Label of each spline or polynomial term -> the variable it reads: the terms of one
    numeric variable whose transform learnt a state (knots, a polynomial's recurrence) and
    gives several columns."""
    formula, state = res.formula, res.formula.spec.transform_state
    out = {}
    for term, columns in formula.terms.items():
        reads = formula.reads[term]
        if term in state and len(columns) > 1 and len(reads) == 1 and reads <= (
                formula.ranges.keys()):
            out[term] = next(iter(reads))
    return out


def effect_curves(res) -> dict[str, pd.DataFrame]:
    """variable -> engine.effect_curve over the range the fit saw, reference at its median."""
    return {variable: engine.effect_curve(res, variable,
                                          at=np.linspace(*res.formula.ranges[variable], GRID))
            for variable in curve_terms(res).values()}


class TermsView(Viewer):
    """The Wald table and the HR curves of the fit shown in Results."""

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.wald = table(css_classes=["wald-table"])
        # new panes in a Column (a HoloViews pane made visible after its object was set failed
        # in the served app)
        self.curves = pn.Column(css_classes=["effect-curves"], sizing_mode="stretch_width")
        self._wald = while_filled(self.wald)     # no empty table on the page
        self.frames: dict[str, pd.DataFrame] = {}
        self.figures: dict[str, tuple] = {}     # file stem -> effect_figure's arguments

    def show_fit(self, fit) -> None:
        res = None if fit is None else fit.result
        self.wald.value, self.curves.objects, self.frames = pd.DataFrame(), [], {}
        self.figures = {}
        if res is None or getattr(res, "formula", None) is None:
            self.info.object = ("Linear terms only. Choose a spline, a polynomial, a "
                                "categorical form or an interaction on the Design tab and fit "
                                "again to see each spline's hazard-ratio curve and the joint "
                                "Wald tests of its terms here.")
            return
        try:
            wald, curves = wald_table(res), effect_curves(res)
        except ValueError as exc:     # penalised columns have no variance
            self.info.object = f"Wald tests and hazard-ratio curves are not available: {exc}"
            return
        show(self.wald, wald, 4)
        self.frames = {"wald_tests": wald, **{f"hr_curve_{v}": c for v, c in curves.items()}}
        self.info.object = (
            f"Model: `{res.formula.rhs}`. Joint Wald test of each term with several columns "
            "(all its coefficients zero)" + (
                "; below, each spline's or polynomial's hazard ratio against its variable, "
                "relative to its median, other covariates at their median or most frequent "
                "value."
                if curves else "."))
        ratio = RATIOS[fit.spec["options"].get("model", "cox")][1]
        self.figures = {f"hr_curve_{v}": (curve, v, res.formula.adjust_to[v], ratio)
                        for v, curve in curves.items()}
        self.curves.objects = [pn.pane.HoloViews(effect_plot(*args))
                               for args in self.figures.values()]

    def files(self) -> dict[str, bytes]:
        """The report folder's files: the Wald tests and each curve (CSV, PNG, SVG)."""
        out = {f"{name}.csv": frame.to_csv(index=False).encode()
               for name, frame in self.frames.items()}
        for name, args in self.figures.items():
            figure = effect_figure(*args)
            out.update({f"{name}.{fmt}": save(figure, fmt) for fmt in ("png", "svg")})
        return out

    def __panel__(self):
        return pn.Column(self.info, self._wald, self.curves, sizing_mode="stretch_width")
