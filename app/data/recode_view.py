"""Recode and filter on the Data tab: one step at a time (app/data/recode.py), each a new version
of the table with the roles kept, listed, undoable, and written into the exported script.
Weighting by a propensity score is such a step: it adds the weight column, makes it the
Weights role (so fits report the robust variance) and says how balance and effective sample
sizes changed."""

from __future__ import annotations

import panel as pn
import param
from panel.viewable import Viewer

from ..shell.widgets import markdown, notify, text_options
from .loading import DataLoadError
from .plots import love_plot, ps_overlap_plot
from .recode import (ESTIMANDS, OPS, balance_note, describe, level_order, not_numbers,
                      parse_mapping, propensity, reference_step)
from .store import Store, parse_cut_points

MAX_LEVELS = 50   # values offered in the pickers


class RecodeView(Viewer):
    """Column, operation, its inputs; Apply and Undo; the list of steps."""

    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.column = pn.widgets.Select(label="Column", width=200)
        self.op = pn.widgets.Select(label="Step", options={v: k for k, v in OPS.items()},
                                    width=240)
        self.low = pn.widgets.FloatInput(label="From (empty: no bound)", value=None, width=150)
        self.high = pn.widgets.FloatInput(label="To (empty: no bound)", value=None, width=150)
        self.values = pn.widgets.MultiChoice(label="Values to keep", width=300)
        self.cuts = pn.widgets.TextInput(label="Cut points", placeholder="e.g. 40, 60",
                                         width=200)
        self.new_name = pn.widgets.TextInput(label="New column", placeholder="column_group",
                                         width=200)
        self.level = pn.widgets.Select(label="Reference level", width=200)
        self.mapping = pn.widgets.TextInput(label="old=new pairs", placeholder="e.g. 1=0, 2=1",
                                            width=240)
        self.ps_covariates = pn.widgets.MultiChoice(label="Propensity-score covariates",
                                                    width=360)
        self.estimand = pn.widgets.Select(label="Estimand", options=ESTIMANDS, value="ATE",
                                          width=260)
        self.trim = pn.widgets.FloatInput(label="Trim PS outside [a, 1 - a] (empty: none)",
                                          value=None, start=0.0, end=0.49, step=0.01,
                                          width=220)
        self.ps_name = pn.widgets.TextInput(label="Weight column", value="ps_weight", width=160)
        self.balance = markdown(sizing_mode="stretch_width")
        self.ps_plots = pn.Row(visible=False)
        self.apply = pn.widgets.Button(label="Apply step", color="primary", width=120)
        self.apply.on_click(self._apply)
        self.undo = pn.widgets.Button(label="Undo last step", width=130)
        self.undo.on_click(self._undo)
        self.steps = markdown(sizing_mode="stretch_width")
        self.number_note = markdown(width=420)
        self.inputs = pn.Row()
        for w in (self.column, self.op):
            w.param.watch(self._inputs, "value")
        self.store.param.watch(self._sync, ["columns", "data_version", "data_steps"])
        self._sync()

    def _sync(self, *events) -> None:
        s = self.store
        frame = s.data is not None
        self.column.options = list(s.columns) if frame else []
        self.apply.disabled = not frame
        self.undo.disabled = not s.data_steps
        if not s.data_steps or s.data_steps[-1]["op"] != "psweight":
            self.balance.object = ""
            self.ps_plots.objects, self.ps_plots.visible = [], False
        self.steps.object = ("Steps applied (in the exported script too): " + "; ".join(
            f"{k + 1}. {describe(step)}" for k, step in enumerate(s.data_steps))
            if s.data_steps else "No recode or filter step: the table as loaded.")
        self._inputs()

    def _inputs(self, *events) -> None:
        s, op, column = self.store, self.op.value, self.column.value
        levels = []
        if s.data is not None and column in s.columns:
            levels = level_order(s.data[column])[: MAX_LEVELS + 1]
        self.values.options = text_options(levels[:MAX_LEVELS])
        others = [c for c in s.columns if c != column] if s.data is not None else []
        self.ps_covariates.options = text_options(others)
        self.ps_covariates.value = [c for c in self.ps_covariates.value if c in others]
        self.level.options = {str(v): v for v in levels[:MAX_LEVELS]}
        # only the chosen step's inputs are drawn (fewer models on the first page)
        self.inputs.objects = {"range": [self.low, self.high], "values": [self.values],
                               "cut": [self.cuts, self.new_name], "reference": [self.level],
                               "recode": [self.mapping], "number": [self.number_note],
                               "psweight": [self.ps_covariates, self.estimand, self.trim,
                                            self.ps_name]}[op]
        if op == "number" and s.data is not None and column in s.columns:
            bad = not_numbers(s.data[column])
            self.number_note.object = (f"{bad:,} value(s) of {column!r} are not numbers and "
                                       "become missing." if bad else
                                       f"Every value of {column!r} reads as a number.")
        self.new_name.placeholder = f"{column}_group" if column else "column_group"

    def step(self) -> dict:
        """The step the inputs describe (DataLoadError when they are incomplete)."""
        op, column = self.op.value, self.column.value
        if not column:
            raise DataLoadError("choose a column")
        if op == "range":
            return {"op": op, "column": column, "low": self.low.value, "high": self.high.value}
        if op == "values":
            if not self.values.value:
                raise DataLoadError("choose the values to keep")
            return {"op": op, "column": column, "values": list(self.values.value)}
        if op == "cut":
            return {"op": op, "column": column, "cuts": parse_cut_points(self.cuts.value),
                    "name": self.new_name.value.strip() or f"{column}_group"}
        if op == "reference":
            if self.level.value is None:
                raise DataLoadError("choose the reference level")
            return reference_step(self.store.data, column, self.level.value)
        if op == "number":
            return {"op": op, "column": column}
        if op == "psweight":
            if not self.ps_covariates.value:
                raise DataLoadError("choose the propensity-score covariates")
            name = self.ps_name.value.strip() or "ps_weight"
            if name in self.store.columns:
                raise DataLoadError(f"column {name!r} exists: give the weights another name")
            # case weights already in the Weights role multiply the PS weights (sampling weights)
            return {"op": op, "column": column, "covariates": list(self.ps_covariates.value),
                    "estimand": self.estimand.value, "trim": self.trim.value or None,
                    "weights": self.store.weights, "name": name}
        return {"op": op, "column": column, "mapping": parse_mapping(self.mapping.value)}

    def _apply(self, event=None) -> None:
        try:
            step = self.step()
            before = self.store.data
            self.store.apply_data_step(step)
        except DataLoadError as exc:
            notify("error", f"Recode/filter: {exc}", duration=0)
            return
        if step["op"] == "psweight":
            self.store.weights = step["name"]
            ps = propensity(before, step)
            self.balance.object = (f"**{step['name']}** is the Weights role (fits report the "
                                   "robust variance): " + balance_note(ps))
            self.ps_plots.objects = [pn.pane.HoloViews(ps_overlap_plot(ps.ps, ps.treatment)),
                                     pn.pane.HoloViews(love_plot(ps.balance))]
            self.ps_plots.visible = True
        notify("success", f"{describe(step)}: {self.store.n_rows:,} rows", duration=3000)

    def _undo(self, event=None) -> None:
        self.store.undo_data_step()

    def __panel__(self):
        return pn.Column(
            "### Recode and filter",
            pn.Row(self.column, self.op),
            self.inputs,
            pn.Row(self.apply, self.undo), self.steps, self.balance, self.ps_plots,
            sizing_mode="stretch_width")
