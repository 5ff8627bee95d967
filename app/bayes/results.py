"""The Bayesian page's results: a caterpillar of posterior intervals, the posterior beside the
probit MLE with the shrinkage plot, traces and autocorrelation of chosen coefficients, R-hat and
ESS, and the exports (summary CSV, draws NetCDF, plots HTML, JSON spec, Python script).

Each is a page of its own tabs (app/shell/lazy_tab.py: only the open one is in the browser), a new
run opening its posterior: the six plots and two tables sent at once were most of the 3 s
between the sampler's end and its results on the page."""

from __future__ import annotations

import io

import panel as pn
import param
from bokeh.resources import INLINE
from panel.viewable import Viewer

from ..shell.lazy_tab import LazyTabs
from ..shell.widgets import markdown, notify, show, table, text_options
from . import plots
from .state import BayesState, convergence_warning


class BayesResults(Viewer):
    """Everything drawn from BayesState.run; redrawn when a run arrives or the scale changes."""

    state = param.ClassSelector(class_=BayesState)

    def __init__(self, **params):
        super().__init__(**params)
        st = self.state
        self.headline = markdown(sizing_mode="stretch_width")
        self.warning = markdown(sizing_mode="stretch_width", css_classes=["bayes-warning"],
                                styles={"color": "#9c2a00"})
        self.per_sd = pn.widgets.Checkbox.from_param(st.param.per_sd,
                                                     name="Coefficients per SD of the covariate")
        self.chosen = pn.widgets.MultiChoice(label="Traces and autocorrelation of",
                                             max_items=4, sizing_mode="stretch_width")
        self.chosen.param.watch(self._draw_chains, "value")
        self.caterpillar = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.traces = pn.Row()
        self.acf = pn.pane.HoloViews(sizing_mode="stretch_width")
        self.shrinkage = pn.Row()
        self.compare = table(css_classes=["bayes-compare"], height=370)
        self.diagnostics = table(css_classes=["bayes-diagnostics"], height=400)
        self.downloads = self._downloads()
        self.pages = LazyTabs({
            "Posterior": lambda: pn.Column(self.headline, self.warning, self.per_sd,
                                           self.caterpillar, sizing_mode="stretch_width"),
            "Beside the MLE": lambda: pn.Column(self.compare, self.shrinkage,
                                                sizing_mode="stretch_width"),
            "Chains": lambda: pn.Column(self.chosen, self.traces, self.acf,
                                        sizing_mode="stretch_width"),
            "Convergence": lambda: pn.Column(
                markdown("R-hat, effective sample size (ESS) and ESS per second. Monte Carlo "
                         "standard errors (mcse_mean) are on the scale of the estimates (per "
                         "SD of the covariate when that box is ticked)."),
                self.diagnostics, sizing_mode="stretch_width"),
            "Downloads": lambda: pn.Row(*self.downloads)}, sizing_mode="stretch_width")
        st.param.watch(lambda event: setattr(self.pages.tabs, "active", 0), ["run"])
        st.param.watch(self._draw, ["run", "per_sd"])
        self._draw()

    def _draw(self, *events) -> None:
        st, run = self.state, self.state.run
        for widget in self.downloads:
            widget.disabled = run is None
        if run is None:
            self.headline.object = "Run the sampler to see the posterior."
            self.warning.object = ""
            return
        warning = convergence_warning(run.summary)
        self.warning.object = f"**Warning:** {warning}" if warning else ""
        post, s = run.posterior, run.spec["sample"]
        mle = ("the probit MLE is beside it" if run.mle is not None
               else f"no probit MLE: {run.mle_note}")
        self.headline.object = (
            f"**{s['model']}** on {run.spec['data']['label']}: outcome {run.spec['outcome']}, "
            f"{len(run.cohort.names)} predictor(s), {run.cohort.n:,} rows; {s['chains']} "
            f"chain(s) × {s['draws']:,} draws (burn-in {s['burn_in']:,}, thin {s['thin']}, "
            f"seed {s['seed']}) in {post.timings['sampling']:.2f} s of sampling; median ESS "
            f"per second {post.ess_per_second:,.1f}; {mle}.")
        scale = st.scale_label()
        self.caterpillar.object = plots.caterpillar(st.intervals(run), scale)
        self.shrinkage.objects = [pn.pane.HoloViews(p)
                                  for p in plots.shrinkage(st.shrinkage(run), scale)]
        show(self.compare, st.comparison(run), 4)
        show(self.diagnostics, st.diagnostics(run), 3)
        options = st.coefficient_options(run)
        keep = [n for n in self.chosen.value if n in options] or options[:2]
        redraw = keep == list(self.chosen.value)   # else the value's watcher redraws them
        self.chosen.param.update(options=text_options(options), value=keep)
        if redraw:
            self._draw_chains()

    def _draw_chains(self, *events) -> None:
        run = self.state.run
        names = list(self.chosen.value)
        if run is None or not names:
            self.traces.objects, self.acf.object = [], None
            return
        self.traces.objects = [pn.pane.HoloViews(p) for p in plots.traces(
            self.state.traces(run, names), self.state.scale_label())]
        self.acf.object = plots.autocorrelation(self.state.autocorrelations(run, names))

    # ------------------------------------------------------------------------------------
    # exports
    def _downloads(self) -> list:
        st = self.state

        def download(label, filename, make):
            def callback():
                try:
                    out = make(st.run)
                except Exception as exc:  # a download never shows a traceback
                    notify("error", f"{label}: {exc}", duration=0)
                    out = f"export failed: {exc}\n"
                return io.BytesIO(out) if isinstance(out, bytes) else io.StringIO(out)

            return pn.widgets.FileDownload(callback=callback, filename=filename, label=label,
                                           width=170)

        return [download("Summary CSV", "bayes_summary.csv", st.summary_csv),
                download("Draws NetCDF", "bayes_draws.nc", st.netcdf),
                download("Plots HTML", "bayes_plots.html", lambda run: self.plots_html()),
                download("JSON spec", "bayes_spec.json", st.spec_json),
                download("Python script", "bayes_run.py",
                         lambda run: st.python_script(run.spec))]

    def plots_layout(self) -> pn.Column:
        return pn.Column(markdown(self.headline.object), self.caterpillar.object,
                         pn.Row(*[p.object for p in self.shrinkage]),
                         pn.Row(*[p.object for p in self.traces]), self.acf.object)

    def plots_html(self) -> str:
        """The plots as one self-contained HTML page (Bokeh inlined: it opens offline)."""
        out = io.StringIO()
        self.plots_layout().save(out, resources=INLINE, title="survscan Bayesian run")
        return out.getvalue()

    def __panel__(self):
        return pn.Column("### Results", self.pages.tabs, sizing_mode="stretch_width")
