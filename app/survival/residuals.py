"""Residuals of a kept Cox fit, shown inside Results: the functional form of a covariate
(martingale residuals against it with R's lowess smooth: engine.functional_form), the shape the
fit gave it with the partial residuals around it (R's termplot: engine.term_plot), the rows with
the most influence on a coefficient (dfbeta in standard errors) and the rows the model fits
worst (deviance residuals), as R's residuals.coxph gives them (Therneau and Grambsch 2000,
chapters 5 and 7).  Computed on request by the page's job runner in a worker thread (10^6 rows:
a few seconds), with a figure for the page and the report.

No numerics here: the residuals and the smooth are the engine's; this module picks what to
draw (a sample of the dots, every row of the tables' extremes) and lays the page out.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.figures import residuals_figure, save, svg_markup, term_figure
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, show, table, while_visible

MAX_DOTS = 3_000       # dots drawn per panel (a sample of the rows; every extreme row kept)
MAX_CURVE = 2_000      # points of the drawn smooth
TOP = 10               # rows in each table of extremes


def why_not(fit) -> str:
    """Why residuals cannot be shown for ``fit`` ('' when they can)."""
    if fit is None:
        return "No fit yet."
    res = fit.result
    if res.spec.get("model") != "cox":
        return "Residuals are computed for Cox fits (R's residuals.coxph)."
    if res.spec.get("penalty") != "none":
        return ("Residuals need an unpenalised fit (a penalty shrinks the coefficients they "
                "are taken at): fit again without a penalty.")
    if subjects(res) is None:
        return "This fit keeps no data (its cohort was released)."
    return ""


def subjects(res):
    """The rows the residuals are of: the fitted cohort, before any cut points."""
    problem = res.problem
    if problem is None:
        return None
    return problem.subjects if res.spec.get("cut_points") else problem.cohort


def covariate_options(res) -> list[str]:
    """The fit's covariates whose form can bend: the non-binary ones entered as they are and
    the variables of its splines and polynomials (their basis columns are not a covariate's
    values), all when there is none."""
    cohort = subjects(res)
    names = [n for n, binary in zip(cohort.names, cohort.binary)
             if not binary and "(" not in n] + list(cohort.variables)
    return names or list(cohort.names)


def drawn(values: np.ndarray, limit: int, seed: int = 0) -> np.ndarray:
    """Rows to draw: all, or ``limit`` of them (a fixed random sample) with the TOP largest
    |values| always among them."""
    n = values.size
    if n <= limit:
        return np.arange(n)
    extreme = np.argsort(-np.abs(values), kind="stable")[:TOP]
    sample = np.random.default_rng(seed).choice(n, limit - TOP, replace=False)
    return np.unique(np.concatenate([sample, extreme]))


def residual_numbers(fit, covariate: str, coefficient: str, null: bool = False, cancel=None,
                     progress=None) -> dict:
    """The numbers and the figures of the page (a worker thread may run it: no widget is
    touched): the functional form (of the model without covariates: ``null``), the term
    plot of ``covariate`` (``term``: None, with ``term_note`` saying why, when it has no term
    of its own in the fit or the fit has cut points), dfbeta / SE on ``coefficient``, the
    deviance residuals."""
    res = fit.result
    rows = subjects(res)
    steps = ("functional form", "term plot", "influence", "outliers")

    def step(k):
        if cancel is not None and cancel.is_set():
            raise engine.Cancelled("cancelled between the residuals")
        if progress is not None:
            progress(k, len(steps), steps[k] if k < len(steps) else "")

    step(0)
    form = engine.functional_form(res, covariate, null=null)
    step(1)
    term, term_note = _term_plot(res, covariate,
                                 None if null else form["martingale"].to_numpy())
    step(2)
    dfbeta = engine.residuals(res, "dfbeta", columns=[coefficient])[coefficient].to_numpy()
    dfbetas = dfbeta / float(res.se[coefficient])
    step(3)
    deviance = engine.residuals(res, "deviance").to_numpy()
    martingale = (engine.residuals(res).to_numpy() if null
                  else form["martingale"].to_numpy())           # the fit's, for the table
    step(4)
    base = pd.DataFrame({"row": np.arange(1, rows.n + 1), "time": np.asarray(rows.time),
                         "event": np.asarray(rows.event)})
    # the covariate's value in each row (an interval of a cut-point fit: the covariate's)
    covariate_of = coefficient if coefficient in rows.names else coefficient.split("[")[0]
    influence = base.assign(**{covariate_of: _column(rows, covariate_of), "dfbeta": dfbeta,
                               "dfbeta / SE": dfbetas})
    influence = influence.iloc[np.argsort(-np.abs(dfbetas), kind="stable")[:TOP]]
    outliers = base.assign(martingale=martingale, deviance=deviance)
    outliers = outliers.iloc[np.argsort(-np.abs(deviance), kind="stable")[:TOP]]
    dots = drawn(form["martingale"].to_numpy(), MAX_DOTS)
    spikes = drawn(dfbetas, MAX_DOTS)
    curve = form.sort_values("x", kind="stable")
    curve = curve.iloc[np.unique(np.linspace(0, len(curve) - 1, MAX_CURVE).astype(int))]
    note = (f"{dots.size:,} of {rows.n:,} rows drawn (the smooth is of every row)"
            if dots.size < rows.n else "")
    figure = residuals_figure(form.iloc[dots], curve, covariate,
                              pd.DataFrame({"row": spikes + 1, "dfbetas": dfbetas[spikes]}),
                              coefficient, note, null)
    out = {"covariate": covariate, "coefficient": coefficient, "null": null, "form": form,
           "influence": influence, "outliers": outliers, "figure": figure,
           "svg": svg_markup(figure, tight=False), "term": term, "term_note": term_note}
    if term is not None:
        dots = drawn(term.rows["partial"].to_numpy(), MAX_DOTS)
        curve = term.curve.iloc[np.unique(np.linspace(0, len(term.curve) - 1,
                                                      MAX_CURVE).astype(int))]
        out["term_figure"] = term_figure(
            term.rows.iloc[dots], curve, covariate, term.term,
            f"{dots.size:,} of {rows.n:,} rows drawn (the line is of every row)"
            if dots.size < rows.n else "")
        out["term_svg"] = svg_markup(out["term_figure"], tight=False)
    return out


def _term_plot(res, covariate: str, martingale):
    """(engine.term_plot of ``covariate``, '') or (None, why there is none); ``martingale``:
    the fit's residuals when the functional form has them."""
    if res.spec.get("cut_points"):
        return None, ("A fit with cut points has a coefficient per interval: its terms "
                      "depend on time, so no term plot.")
    try:
        return engine.term_plot(res, covariate, martingale=martingale), ""
    except ValueError as exc:       # no term of its own (an interaction only): say so
        return None, f"No term plot: {exc}"


def _column(cohort, name: str) -> np.ndarray:
    """The cohort's values of covariate ``name`` (NaN where it has no such column)."""
    if name not in cohort.names:
        return np.full(cohort.n, np.nan)
    return cohort.X[:, cohort.names.index(name)].toarray().ravel()


class ResidualsView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.covariate = pn.widgets.Select(label="Functional form of", width=220)
        self.model = pn.widgets.Select(label="Martingale residuals of", width=260,
                                       options={"this fit": False,
                                                "the model without covariates": True})
        self.coefficient = pn.widgets.Select(label="Influence on", width=220)
        self.button = pn.widgets.Button(label="Show residuals", width=170)
        self.button.on_click(self._on_click)
        self.status = markdown(sizing_mode="stretch_width", css_classes=["residuals-status"])
        self.runner = JobRunner(self.status, [self.button])
        self.figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                  css_classes=["residuals-figure"])
        self.term_note = markdown(sizing_mode="stretch_width", css_classes=["term-note"])
        self.term_figure = pn.pane.SVG(sizing_mode="stretch_width", max_width=1000,
                                       css_classes=["term-figure"])
        self.influence = table(css_classes=["residuals-influence"])
        self.outliers = table(css_classes=["residuals-outliers"])
        self.results = pn.Column(self.figure, "#### The term's shape and its partial residuals "
                                 "(R's termplot)", self.term_note, self.term_figure,
                                 "#### Most influential rows", self.influence,
                                 "#### Rows fitted worst", self.outliers, visible=False,
                                 sizing_mode="stretch_width")
        # what has nothing to show yet is left out of the page (widgets.while_visible)
        self._results = while_visible(self.results)
        self._fit = None
        self.shown: dict | None = None      # residual_numbers() on screen

    def show_fit(self, fit) -> None:
        """The fit shown in Results: clear the last residuals, offer its covariates."""
        self._fit, self.shown = fit, None
        self.results.visible = False
        self.figure.object = self.term_figure.object = None
        self.term_note.object = ""
        self.influence.value = self.outliers.value = pd.DataFrame()
        self.status.object = ""
        why = why_not(fit)
        self.button.disabled = bool(why)
        if why:
            self.info.object = why
            self.covariate.options = self.coefficient.options = []
            return
        res = fit.result
        self.covariate.options = covariate_options(res)
        self.coefficient.options = [n for n in res.coef.index if np.isfinite(res.se[n])]
        treatment = fit.spec["roles"].get("treatment")
        if treatment in self.coefficient.options:
            self.coefficient.value = treatment
        self.info.object = (
            "**Functional form**: the martingale residuals against a covariate with R's lowess "
            "smooth; a flat smooth says its form in the fit is right, a bend says where (try "
            "a spline, ns(x, df=4), on the Design tab); those of the model without covariates "
            "show each covariate's form before any is chosen. **Term plot**: the shape the fit "
            "gave the covariate (its term's part of the log hazard ratio, centred as R's "
            "termplot, with a 95% band) and the partial residuals around it; dots that stray "
            "from the line in one region say the shape misses there. **Influence**: how far "
            "each row moves a coefficient, in standard errors, when it is left out (dfbeta / "
            "SE). "
            "**Outliers**: the rows the model fits worst (largest deviance residuals). Rows "
            "are numbered 1 to n among the rows fitted (rows dropped for a missing value are "
            "not counted).")

    async def _on_click(self, event=None) -> None:
        await self.compute()

    async def compute(self) -> None:
        """The residuals of the shown fit for the chosen covariate and coefficient."""
        fit, covariate, coefficient = self._fit, self.covariate.value, self.coefficient.value
        null = bool(self.model.value)
        if self.runner.running:
            return
        why = why_not(fit) or ("" if covariate and coefficient else
                               "choose a covariate and a coefficient")
        if why:
            self.runner.refuse(f"Residuals: {why}")
            return

        def work(cancel: threading.Event, progress):
            return residual_numbers(fit, covariate, coefficient, null, cancel, progress)

        def done(result, progress) -> str:
            if self._fit is not fit:                 # another fit was shown meanwhile
                return "Residuals of an earlier fit: not shown."
            self._show(result)
            return (f"Residuals of **{fit.name}** in {progress.elapsed:.2f} s "
                    f"({len(result['form']):,} rows).")

        await self.runner.run(
            work, lambda p: f"Computing the {p.note or 'residuals'} … {p.elapsed:.1f} s",
            notice="Residuals", done=done, cancelled=lambda p: "Cancelled.",
            thread="survscan-residuals")

    def _show(self, result: dict) -> None:
        self.shown = result
        self.figure.object = result["svg"]
        self.term_figure.object = result.get("term_svg")
        term = result["term"]
        self.term_note.object = (result["term_note"] if term is None else
                                 f"The term **{term.term}** of {result['covariate']}: line, its "
                                 "part of the log hazard ratio (95% band); dots, the partial "
                                 "residuals (martingale residual plus that part).")
        show(self.influence, result["influence"], 4)
        show(self.outliers, result["outliers"], 4)
        self.results.visible = True

    def files(self) -> dict[str, bytes]:
        """The report folder's residual figure (PNG, SVG) and tables (CSV), once shown."""
        if self.shown is None:
            return {}
        r = self.shown
        return {"residuals.png": save(r["figure"], "png", tight=False),
                "residuals.svg": save(r["figure"], "svg", tight=False),
                "functional_form.csv": r["form"].rename(columns={
                    "x": r["covariate"],
                    "martingale": "martingale (no covariates)" if r["null"] else "martingale"})
                .to_csv(index=False).encode(),
                "influence.csv": r["influence"].to_csv(index=False).encode(),
                "outliers.csv": r["outliers"].to_csv(index=False).encode(),
                **self._term_files(r)}

    @staticmethod
    def _term_files(r: dict) -> dict[str, bytes]:
        """The term plot's figure and its curve, when the covariate has a term."""
        if r["term"] is None:
            return {}
        return {"term_plot.png": save(r["term_figure"], "png", tight=False),
                "term_plot.svg": save(r["term_figure"], "svg", tight=False),
                "term_plot.csv": r["term"].curve.rename(columns={"x": r["covariate"]})
                .to_csv(index=False).encode()}

    def __panel__(self):
        return pn.Column(self.info,
                         pn.Row(self.covariate, self.model, self.coefficient, self.button),
                         pn.Row(self.runner.cancel_button, self.runner.progress), self.status,
                         self._results, sizing_mode="stretch_width")
