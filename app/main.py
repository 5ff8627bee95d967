"""survscan: point-and-click survival analysis, from a cohort to hazard ratios.

Serve it with ``make run`` (``python -m app.serve app/main.py``: ``panel serve``, compressed).
``build_app`` is called once per browser session, so every session has its own Store (data,
roles, design), survival Workbench (kept fits) and page states; nothing mutable lives at module
level. Each page is a folder (app/<page>/: its state, jobs, script, view and plots) built in the
shell (app/shell/); numerics come from engine/ (lifelines only as a timed peer).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import panel as pn
import param
from bokeh.models import CustomJS

from app.analyses.autosave import Autosaver
from app.analyses.autosave import load as load_saved
from app.analyses.autosave import owner as autosave_owner
from app.analyses.autosave import set_cookie_script
from app.analyses.named import NamedAnalyses
from app.analyses.restore import RestoreOffer
from app.analyses.view import AnalysesView
from app.bayes.state import BayesState
from app.bayes.view import BayesView
from app.data.store import Store
from app.data.view import DataView
from app.describe.view import DescribeView
from app.export.view import ExportView
from app.gwas.view import GwasView
from app.omop.state import OmopState
from app.omop.view import OmopView
from app.sccs.view import SccsView
from app.sensitivity.view import SensitivityView
from app.shell.lazy_tab import LazyTabs
from app.shell.long_lived import freeze_imports, holoviews_bokeh
from app.shell.page_weight import without_mathjax, without_webgl
from app.survival.design import DesignView
from app.survival.fit import FitView
from app.survival.results import ResultsView
from app.survival.state import Workbench
from app.timing.view import TimingView

pn.extension("tabulator", "filedropper", notifications=True)
holoviews_bokeh()

TABS = ("Data", "Design", "Describe", "Fit", "Results", "Sensitivity", "OMOP study", "SCCS",
        "Bayesian", "GWAS", "Timing", "Export")
# tab -> its view, which redraws only while shown (app/shell/on_screen.py)
DRAWN_WHEN_SHOWN = {"Describe": "describe", "Results": "results", "Export": "export"}
LOGO = Path(__file__).resolve().parent.parent / "assets" / "survscan.svg"


class App(param.Parameterized):
    """One session's store and views, arranged in a template."""

    def __init__(self, sample: str | None = "rossi", autosave: bool = False, **params):
        super().__init__(**params)
        user = None
        if autosave:
            user, token = autosave_owner(pn.state.user, pn.state.cookies, pn.state.curdoc
                                         is not None and pn.state.curdoc.session_context
                                         is not None)
            if token is not None:
                pn.state.curdoc.js_on_event("document_ready",
                                            CustomJS(code=set_cookie_script(token)))
        saved = load_saved(user) if autosave else None
        self.store = Store()
        if sample:
            self.store.load_sample(sample)
        self.workbench = Workbench(store=self.store)
        self.omop_state = OmopState(workbench=self.workbench)
        self.analyses = NamedAnalyses(self.store, self.workbench, self.omop_state)
        if saved is not None and saved.spec == self.store.spec() and not saved.fits:
            saved = None  # nothing to reopen beyond what is open
        self.restore = RestoreOffer(analyses=self.analyses, record=saved)
        if autosave:
            self.saver = Autosaver(self.store, self.workbench, self.omop_state, user,
                                   lambda: self.analyses.current)
            self.store.param.watch(self.saver.save, [
                "data_version", "time", "start", "event", "event_codes", "treatment",
                "covariates", "strata", "id", "weights", "missing", "cut_points", "model", "cause",
                "ties", "penalty", "strength", "unpenalized", "backend", "solver"])
            self.workbench.param.watch(self.saver.save, ["fits", "cv"])
        self.analyses_view = AnalysesView(store=self.store, analyses=self.analyses)
        self.data = DataView(store=self.store)
        # the first page is built now; every other page when it is first opened
        # (app/shell/lazy_tab.py)
        self.pages = LazyTabs(dict(zip(TABS, (
            lambda: self.data, lambda: self.design, lambda: self.describe, lambda: self.fit,
            lambda: self.results, lambda: self.sensitivity, lambda: self.omop,
            lambda: self.sccs, lambda: self.bayes,
            lambda: self.gwas, lambda: self.timing,
            lambda: pn.Column(self.export, self.analyses_view.files)))),
            shown=self._page_shown, hidden=self._page_hidden, sizing_mode="stretch_width")
        self.tabs = self.pages.tabs
        self.sidebar = pn.pane.Markdown(sizing_mode="stretch_width",  # file names stay text
                                       renderer_options={"html": False})
        # after every other watcher of the fits (precedence 1): Results draws the new fit while
        # its page is off screen, then the page is sent to the browser once, as drawn (opened
        # first, its stale page was sent and then patched into the new one)
        self.workbench.param.watch(self._after_fit, ["fits"], precedence=1)
        self.tabs.param.watch(self._on_tab, ["active"])
        self.store.param.watch(self._describe, ["data_version", "time", "event", "covariates",
                                                "strata", "cut_points"])
        self.workbench.param.watch(self._describe, ["fits"])
        self._describe()

    # the views behind the lazily built pages: each made on first use (its page opened, or
    # another view or a test asking for it), reading the store as it is then
    @cached_property
    def design(self) -> DesignView:
        return DesignView(store=self.store)

    @cached_property
    def describe(self) -> DescribeView:
        return DescribeView(store=self.store, lazy=True)

    @cached_property
    def fit(self) -> FitView:
        return FitView(store=self.store, workbench=self.workbench)

    @cached_property
    def results(self) -> ResultsView:
        return ResultsView(store=self.store, workbench=self.workbench, lazy=True)

    @cached_property
    def sensitivity(self) -> SensitivityView:
        return SensitivityView(store=self.store)

    @cached_property
    def omop(self) -> OmopView:
        return OmopView(state=self.omop_state)

    @cached_property
    def sccs(self) -> SccsView:
        return SccsView()

    @cached_property
    def timing(self) -> TimingView:
        return TimingView(store=self.store)

    @cached_property
    def export(self) -> ExportView:
        return ExportView(store=self.store, workbench=self.workbench, results=self.results,
                          describe=self.describe, lazy=True)

    @cached_property
    def bayes(self) -> BayesView:
        return BayesView(state=BayesState(store=self.store))

    @cached_property
    def gwas(self) -> GwasView:
        return GwasView()

    def _after_fit(self, event) -> None:
        """A new fit opens Results, except the OMOP tab's kept fit (its results are there)."""
        if len(event.new) > len(event.old) and self.tabs.active != TABS.index("OMOP study"):
            self.tabs.active = TABS.index("Results")

    def _page_shown(self, name: str) -> None:
        """The page about to be shown draws what changed while it was hidden."""
        if name in DRAWN_WHEN_SHOWN:
            getattr(self, DRAWN_WHEN_SHOWN[name]).show()

    def _page_hidden(self, name: str) -> None:
        """The page left stops redrawing."""
        if name in DRAWN_WHEN_SHOWN:
            getattr(self, DRAWN_WHEN_SHOWN[name]).hide()

    async def _on_tab(self, event) -> None:
        if event.new == TABS.index("OMOP study"):
            await self.omop.on_show()

    def _describe(self, *events) -> None:
        s = self.store
        self.sidebar.object = "\n".join([
            "**Current analysis**  ",
            f"**Data:** {s.source.get('label', 'none')}  ",
            f"{s.n_rows:,} rows  ",
            f"**Time:** {s.time or '—'}{' (start ' + s.start + ')' if s.start else ''}  ",
            f"**Event:** {s.event or '—'}  ",
            f"**Covariates:** {len(s.covariates)}  ",
            f"**Strata:** {', '.join(s.strata) or 'none'}  ",
            f"**Cut points:** {', '.join(s.cut_points) or 'none'}  ",
            f"**Kept fits:** {len(self.workbench.fits)}",
            "",
            "Steps: **Data** → **Design** → **Describe** (Table 1, Kaplan-Meier, log-rank) → "
            "**Fit** → **Results**; **Sensitivity** fits a grid of variants of the analysis; "
            "**Timing** compares backends and lifelines; **Export** "
            "writes CSV, HTML, PNG/SVG, JSON, a Python script and a report folder; **OMOP "
            "study** runs a new-user study on an OMOP CDM (Eunomia by default). **SCCS**, "
            "**Bayesian** and **GWAS** are self-controlled case series, the horseshoe probit "
            "sampler and the multi-trait GWAS scan, each with its own data.",
        ])

    def template(self) -> pn.template.BaseTemplate:
        return pn.template.BootstrapTemplate(
            title="survscan", sidebar=[self.sidebar, self.analyses_view],
            main=[self.restore, self.tabs],
            sidebar_width=260,
            header_background="#2f4f6f", logo=str(LOGO) if LOGO.exists() else None)


def build_app(sample: str | None = "rossi", autosave: bool = False) -> App:
    """A fresh app (one per browser session); ``autosave`` saves the user's analysis as it
    changes and offers the last one again (the served app does)."""
    return App(sample=sample, autosave=autosave)


# served (``pn.state.served``'s own test, without the inspect.stack() it takes: 20 ms a session)
if __name__.startswith("bokeh_app_"):
    without_mathjax()
    without_webgl()
    freeze_imports()
    # the template's roots join the document in one walk of its model graph, not one per root
    with pn.io.hold(freeze=True):
        build_app(autosave=True).template().servable(title="survscan")
