"""Sensitivity tab: a grid of variants of the current analysis fitted together by
engine.sensitivity_study (one sorted layout per stratum design; subgroups as weights), in a
worker thread with progress and Cancel, shown as a specification curve (the hazard ratio of
the treatment in every variant, sorted, with its 95% CI), a table with each variant's choices
and E-values (VanderWeele & Ding 2017), and the count of variants before running.

The axes offered come from the current analysis: adjustment sets (all covariates, the
treatment alone, each other covariate dropped in turn), subgroups (each level of a column
with few levels, beside everyone) and both tie rules. The numbers are the engine's; each
variant equals its own engine.fit (tests/engine/sensitivity).
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..job_slots import SLOTS
from ..loading import DataLoadError
from ..store import Store
from ._common import in_thread, markdown, notify, show, table, text_options
from .plots import specification_curve

MAX_LEVELS = 8          # a subgroup column offers at most this many levels
ADJUST = {"all covariates": "all", "the treatment alone": "alone",
          "each other covariate dropped in turn": "drop"}
SHOWN = ["variant", "covariates", "subgroup", "ties", "hr", "hr_lower", "hr_upper", "p", "n",
         "events", "evalue_point", "evalue_ci", "error", "note"]


def columns_of(cohort, column: str) -> list[str]:
    """The cohort's encoded names of a data column (itself, or its one-hot levels)."""
    return [n for n in cohort.names if n == column or n.startswith(column + "[")]


def check_design(store: Store) -> None:
    """DataLoadError naming what the study needs and the analysis lacks."""
    if not store.treatment or store.treatment not in store.covariates:
        raise DataLoadError("set the Treatment / grouping column on the Data tab and keep it "
                            "among the covariates: the study reports its hazard ratio")
    if store.model != "cox":
        raise DataLoadError("sensitivity studies are run for Cox models (event 0/1)")


def axis_sizes(store: Store, adjust: list[str], subgroup: str | None,
               ties: list[str]) -> dict:
    """axis -> number of choices, from the store alone (no cohort is built to count)."""
    check_design(store)
    others = [c for c in store.covariates if c != store.treatment]
    sets = (("all" in adjust or not adjust) + ("alone" in adjust)
            + (len(others) if "drop" in adjust else 0))
    sizes = {"covariates": sets, "ties": len(ties) or 1}
    if subgroup:
        sizes["subgroup"] = 1 + int(store.data[subgroup].nunique(dropna=True))
    return sizes


def plan(store: Store, adjust: list[str], subgroup: str | None, ties: list[str]):
    """(cohort, coefficient names of interest, vary) for the chosen axes; DataLoadError
    naming what is missing."""
    check_design(store)
    treatment = store.treatment
    cohort = store.build_cohort()
    interest = columns_of(cohort, treatment)
    others = [c for c in store.covariates if c != treatment]
    sets = {}
    if "all" in adjust or not adjust:
        sets["all"] = list(cohort.names)
    if "alone" in adjust:
        sets[f"{treatment} alone"] = interest
    if "drop" in adjust:
        for c in others:
            sets[f"without {c}"] = [n for n in cohort.names if n not in columns_of(cohort, c)]
    vary = {"covariates": sets, "ties": list(ties) or [store.effective_ties]}
    if subgroup:
        values = store.data[subgroup]
        if len(values) != cohort.n:
            raise DataLoadError("subgroups need the cohort's rows as loaded: rows were dropped "
                                "for missing values; filter them out on the Data tab first")
        levels = pd.unique(values.dropna())
        vary["subgroup"] = {"everyone": None, **{f"{subgroup} = {v}": (values == v).to_numpy()
                                                 for v in levels}}
    return cohort, interest, vary


def count(vary: dict) -> int:
    return int(np.prod([len(v) for v in vary.values()]))


class SensitivityView(Viewer):
    store = param.ClassSelector(class_=Store)
    last_outcome = param.String(default="", doc="done | cancelled | failed (for tests)")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        self.adjust = pn.widgets.CheckBoxGroup(options=ADJUST, value=["all", "alone", "drop"],
                                               inline=False)
        self.subgroup = pn.widgets.Select(label="Subgroups by (each level, and everyone)",
                                          width=260)
        self.ties = pn.widgets.CheckBoxGroup(options={"Breslow": "breslow", "Efron": "efron"},
                                             value=[s.effective_ties], inline=True)
        self.size = markdown()
        self.run_button = pn.widgets.Button(label="Run the variants", color="primary",
                                            width=170)
        self.run_button.on_click(self._on_run)
        self.cancel_button = pn.widgets.Button(label="Cancel", color="danger", width=110,
                                               disabled=True)
        self.cancel_button.on_click(lambda event: self._cancel.set())
        self.progress = pn.indicators.Progress(value=0, max=100, width=300, visible=False)
        self.status = markdown(sizing_mode="stretch_width")
        # the curve's pane stays visible inside a Column that is shown (see adjusted_view.py)
        self.curve = pn.pane.HoloViews()
        self.results = pn.Column(self.curve, visible=False, sizing_mode="stretch_width")
        self.table = table(pagination="local", page_size=15, css_classes=["sensitivity-table"])
        self.result = None
        self.running = False
        self._cancel = threading.Event()
        for w in (self.adjust, self.subgroup, self.ties):
            w.param.watch(self._count, "value")
        s.param.watch(self._sync, ["data_version", "columns", "covariates", "treatment"])
        self._sync()

    def _sync(self, *events) -> None:
        s = self.store
        few = []
        if s.data is not None:
            few = [c for c in s.columns if s.data[c].nunique(dropna=True) <= MAX_LEVELS
                   and c not in (s.time, s.event, s.start, s.id, s.weights)]
        self.subgroup.options = {"(none)": None, **text_options(few)}
        self._count()

    def _count(self, *events) -> None:
        try:
            sizes = axis_sizes(self.store, self.adjust.value, self.subgroup.value,
                               self.ties.value)
        except ValueError as exc:                       # DataLoadError is one
            self.size.object = f"Not ready: {exc}"
            self.run_button.disabled = True
            return
        self.run_button.disabled = self.running
        total = int(np.prod(list(sizes.values())))
        self.size.object = (f"**{total} variants** of the hazard ratio of "
                            f"{self.store.treatment} ("
                            + " x ".join(f"{n} {axis}" for axis, n in sizes.items()) + ").")

    async def _on_run(self, event=None) -> None:
        await self.run_study()

    async def run_study(self) -> None:
        """Plan, then fit every variant in a new thread once a job slot is free."""
        if self.running:
            return
        try:
            cohort, interest, vary = plan(self.store, self.adjust.value, self.subgroup.value,
                                          self.ties.value)
        except ValueError as exc:                       # DataLoadError is one
            notify("error", f"Sensitivity: {exc}", duration=0)
            self.last_outcome = "failed"
            return
        base = {"ties": vary["ties"][0]}
        cancel = self._cancel = threading.Event()
        done = [0, count(vary)]
        place = [0]

        def progress(k, total):
            done[:] = [k, total]

        def queued(cancel, progress):
            with SLOTS.slot(cancel, lambda k: place.__setitem__(0, k)):
                return engine.sensitivity_study(cohort, interest, vary, base=base,
                                                progress=progress, cancel=cancel)

        self.running = True
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.progress.param.update(value=0, max=max(done[1], 1), visible=True)
        t0 = time.monotonic()
        task = asyncio.ensure_future(in_thread(queued, cancel, progress,
                                               name="survscan-sensitivity"))
        while not task.done():
            self.progress.param.update(max=max(done[1], 1), value=min(done[0], done[1]))
            self.status.object = (f"waiting, number {place[0]} in the queue" if place[0] else
                                  f"Fitting … {done[0]} of {done[1]} variants, "
                                  f"{time.monotonic() - t0:.1f} s")
            await asyncio.wait([task], timeout=0.25)
        try:
            result = task.result()
        except engine.Cancelled:
            self._finish("cancelled", "Cancelled; the earlier study stays.")
            return
        except Exception as exc:            # a failed study is a message; earlier results stay
            self._finish("failed", f"The study failed: {exc}")
            notify("error", f"Sensitivity study failed: {exc}", duration=0)
            return
        self.show_result(result)
        self._finish("done", f"{len(result.table)} variants in {time.monotonic() - t0:.1f} s "
                             f"(the engine: {result.timings.get('total', float('nan')):.2f} s).")

    def show_result(self, result) -> None:
        self.result = result
        t = result.table
        self.curve.object = specification_curve(t)
        self.results.visible = True
        show(self.table, t[[c for c in SHOWN if c in t.columns]], 4)

    def _finish(self, outcome: str, message: str) -> None:
        self.status.object = message
        self.progress.visible = False
        self.running = False
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.last_outcome = outcome

    def __panel__(self):
        return pn.Column(
            "## Sensitivity: the treatment's hazard ratio across analysis variants",
            "Adjustment sets", self.adjust, self.subgroup, "Ties", self.ties, self.size,
            pn.Row(self.run_button, self.cancel_button, self.progress), self.status,
            self.results, self.table, sizing_mode="stretch_width")
