"""Design view: strata, time-varying cut points, covariate forms (splines, polynomials,
categorical) and interactions with the model as a formula, model, ties, penalty, backend and
solver."""

from __future__ import annotations

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.loading import DataLoadError
from ..data.model_terms import FORMS, offered_forms
from ..data.store import Store, parse_cut_points
from ..shell.choices import available_backends, available_models, detect_device
from ..shell.widgets import markdown, notify, text_options
from .path import penalty_words

FORM_VALUES = 3     # distinct values a column needs before forms are offered (a polynomial)


# the models whose ties are not the user's choice, and why
TIES_NOTES = {"fine_gray": "Fine-Gray uses Breslow ties (as cmprsk::crr).",
              "poisson": "Poisson regression has no ties: each row's events over its "
                         "person-time (stop - start, the log offset), with an intercept (the "
                         "baseline rate), one per follow-up band when band limits are typed "
                         "above (piecewise exponential); no strata."}


class DesignView(Viewer):
    """Everything about the model that is not a column role."""

    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        self.strata = pn.widgets.MultiChoice(label="Strata columns (separate baseline hazards)")
        self.cut_covariate = pn.widgets.Select(label="Covariate with a time-varying effect")
        self.cut_times = pn.widgets.TextInput(label="Cut points (times, comma-separated)",
                                              placeholder="e.g. 10, 30")
        self.add_cut = pn.widgets.Button(label="Add cut points", color="primary")
        self.add_cut.on_click(self._add_cut)
        self.clear_cut = pn.widgets.Button(label="Clear cut points")
        self.clear_cut.on_click(lambda e: setattr(s, "cut_points", {}))
        self.cut_list = markdown()
        self.form_covariate = pn.widgets.Select(
            label=f"Numeric covariate ({FORM_VALUES}+ distinct values)", width=220)
        self.form = pn.widgets.Select(label="Its form", options={v: k for k, v in FORMS.items()},
                                      width=260)
        self.form_covariate.param.watch(lambda e: self._sync(), "value")
        self.form.param.watch(self._set_form, "value")
        self.pair_a = pn.widgets.Select(label="Interaction of", width=200)
        self.pair_b = pn.widgets.Select(label="with", width=200)
        self.add_pair = pn.widgets.Button(label="Add interaction a:b", color="primary")
        self.add_pair.on_click(self._add_pair)
        self.clear_pairs = pn.widgets.Button(label="Clear interactions")
        self.clear_pairs.on_click(lambda e: setattr(s, "interactions", []))
        self.formula = pn.widgets.TextAreaInput(
            label="The model as a formula (edit and apply; Surv(time, event) ~ may lead)", rows=3,
            sizing_mode="stretch_width", css_classes=["model-formula"])
        self.apply_formula = pn.widgets.Button(label="Apply formula", color="primary")
        self.apply_formula.on_click(self._apply_formula)
        self.formula_note = markdown()
        self.terms_section = pn.Column(
            "### Covariate forms and interactions",
            pn.Row(self.form_covariate, self.form),
            pn.Row(self.pair_a, self.pair_b), pn.Row(self.add_pair, self.clear_pairs),
            self.formula, self.apply_formula, self.formula_note, sizing_mode="stretch_width")
        s.param.backend.objects = available_backends()
        s.param.model.objects = available_models()
        self.model = pn.widgets.Select.from_param(s.param.model, label="Model")
        self.cause = pn.widgets.Select(label="Cause of interest (Fine-Gray)", visible=False)
        self.cause.param.watch(lambda e: e.new is not None and setattr(s, "cause", int(e.new)),
                               "value")
        self.ties_note = markdown("", visible=False)
        self.bands = pn.widgets.TextInput(
            label="Baseline rate changes at (follow-up times, comma-separated)",
            placeholder="e.g. 20, 40", visible=False, width=440,
            description="Poisson: follow-up split at these times, one baseline rate per band "
                        "(the piecewise-exponential model, as R's survSplit and a band "
                        "factor). Empty: one rate throughout.")
        self.bands.param.watch(self._set_bands, "value")
        self.ties = pn.widgets.RadioButtonGroup.from_param(s.param.ties, label="Ties")
        self.penalty = pn.widgets.RadioButtonGroup.from_param(s.param.penalty, label="Penalty")
        self.strength_as = pn.widgets.RadioButtonGroup.from_param(
            s.param.strength_as, options={"fraction of lambda_max": "fraction",
                                          "lambda": "lambda"})
        self.fraction = pn.widgets.FloatInput.from_param(
            s.param.strength_fraction, label="Strength (fraction of lambda_max; 1 = all "
                                             "penalised coefficients zero)", step=0.01)
        self.strength = pn.widgets.FloatInput.from_param(s.param.strength,
                                                         label="Penalty strength (lambda)",
                                                         step=0.1)
        self.scale = markdown()
        self.unpenalized = pn.widgets.MultiChoice(label="Unpenalized covariates")
        self.backend = pn.widgets.Select.from_param(s.param.backend, label="Backend")
        self.solver = pn.widgets.Select.from_param(s.param.solver, label="Solver")
        self.device = markdown(f"Detected device: **{detect_device()}**")
        self._syncing = False
        self.strata.param.watch(lambda e: self._set("strata", e.new), "value")
        self.unpenalized.param.watch(lambda e: self._set("unpenalized", e.new), "value")
        s.param.watch(self._sync, ["columns", "covariates", "strata", "unpenalized", "cut_points",
                                   "forms", "interactions",
                                   "time", "event", "start", "id", "weights", "penalty",
                                   "model", "bands", "data_version", "strength_as",
                                   "strength",
                                   "strength_fraction", "lambda_max"])
        self._sync()

    def _set(self, name, value) -> None:
        if not self._syncing:
            setattr(self.store, name, list(value or []))

    def _sync(self, *events) -> None:
        s = self.store
        self._syncing = True
        try:
            used = {s.time, s.event, s.start, s.id, s.weights} - {None}
            if s.simulated is not None:
                strata_options = ["strata"] if "strata" in s.columns else []
            else:
                strata_options = [c for c in s.columns if c not in used]
            self.strata.options = text_options(strata_options)
            self.strata.value = [c for c in s.strata if c in strata_options]
            self.cut_covariate.options = list(s.covariates)
            self._sync_terms()
            self.unpenalized.options = text_options(s.covariates)
            self.unpenalized.value = [c for c in s.unpenalized if c in s.covariates]
            self.unpenalized.disabled = s.penalty == "none"
            penalised = s.penalty != "none"
            self.strength_as.visible = penalised
            self.fraction.visible = penalised and s.strength_as == "fraction"
            self.strength.visible = penalised and s.strength_as == "lambda"
            self.scale.object = f"Penalty: {penalty_words(s)}." if penalised else ""
            fine_gray = s.model == "fine_gray"
            causes = s.cause_options()
            self.cause.options = {str(c): c for c in causes}
            if causes:
                self.cause.value = s.cause if s.cause in causes else causes[0]
            self.cause.visible = fine_gray
            self.ties.disabled = s.model in TIES_NOTES
            self.ties_note.object = TIES_NOTES.get(s.model, "")
            self.ties_note.visible = s.model in TIES_NOTES
            self.bands.visible = s.model == "poisson"
            self.bands.value = ", ".join(f"{b:g}" for b in s.bands)
        finally:
            self._syncing = False
        if s.cut_points:
            self.cut_list.object = "\n".join(
                f"- **{k}**: effect changes at {', '.join(f'{c:g}' for c in v)} → coefficients "
                + ", ".join(f"`{n}`" for n in _interval_names(k, v))
                for k, v in s.cut_points.items())
        else:
            self.cut_list.object = "No cut points: every effect is constant over time."

    def _sync_terms(self) -> None:
        """The form of the chosen covariate, the interaction pickers and the formula box."""
        s = self.store
        self.terms_section.visible = s.data is not None
        values = {c: s.data[c].nunique() for c in s.covariates if s.data is not None
                  and c in s.data and pd.api.types.is_numeric_dtype(s.data[c])}
        self.form_covariate.options = [c for c, n in values.items() if n >= FORM_VALUES]
        name = self.form_covariate.value
        form = s.forms.get(name, "linear")
        offered = offered_forms(values[name]) if name in values else ["linear"]
        self.form.options = {FORMS[f]: f for f in FORMS if f in offered or f == form}
        self.form.disabled = not self.form_covariate.options
        self.form.value = form
        self.pair_a.options = self.pair_b.options = list(s.covariates)
        if len(s.covariates) > 1 and (self.pair_a.value not in s.covariates
                                      or self.pair_b.value in (None, self.pair_a.value)):
            self.pair_a.value, self.pair_b.value = s.covariates[:2]
        self.formula.value = s.formula_text()
        self.formula_note.object = (
            "Fitted through the engine's formula (splines and interactions): the kept fit "
            "rebuilds the same columns on new data." if s.model_formula() else
            "Every covariate linear: the covariates are fitted as chosen on the Data tab.")

    def _set_form(self, event) -> None:
        name = self.form_covariate.value
        if self._syncing or not name:
            return
        try:
            self.store.set_form(name, event.new)
        except DataLoadError as exc:
            notify("error", f"Form: {exc}", duration=0)
            self._sync()

    def _add_pair(self, event=None) -> None:
        a, b = self.pair_a.value, self.pair_b.value
        pairs = self.store.interactions
        if not a or not b or a == b:
            notify("warning", "Interactions: choose two different covariates")
        elif [a, b] in pairs or [b, a] in pairs:
            notify("warning", f"Interactions: {a}:{b} is already in the model")
        else:
            self.store.interactions = [*pairs, [a, b]]

    def _apply_formula(self, event=None) -> None:
        try:
            self.store.apply_formula(self.formula.value)
        except (DataLoadError, engine.CohortError) as exc:
            notify("error", f"Formula: {exc} The design is unchanged.", duration=0)
            return
        notify("success", f"Design set from the formula: {self.store.formula_text()}")

    def _set_bands(self, event) -> None:
        """The typed band limits into the store; a bad entry is said and the bands stay."""
        if self._syncing:
            return
        try:
            bands = parse_cut_points(event.new, "band limit") if event.new.strip() else []
        except DataLoadError as exc:
            notify("error", f"Bands: {exc}", duration=0)
            return
        self.store.bands = bands

    def _add_cut(self, event=None) -> None:
        s = self.store
        name = self.cut_covariate.value
        try:
            if not name:
                raise DataLoadError("choose a covariate first")
            cuts = parse_cut_points(self.cut_times.value)
        except DataLoadError as exc:
            notify("error", f"Cut points: {exc}", duration=0)
            return
        s.cut_points = {**s.cut_points, name: cuts}
        self.cut_times.value = ""

    def __panel__(self):
        return pn.Column(
            "## Design",
            pn.Row(
                pn.Column("### Strata", self.strata,
                          "### Time-varying effects (step functions at cut points)",
                          self.cut_covariate, self.cut_times,
                          pn.Row(self.add_cut, self.clear_cut), self.cut_list,
                          self.terms_section, width=520),
                pn.Column("### Model", self.model, self.cause, self.bands, "Ties", self.ties,
                          self.ties_note,
                          "Penalty", self.penalty,
                          self.strength_as, self.fraction, self.strength, self.scale,
                          self.unpenalized, "### Compute", self.backend,
                          self.device, self.solver, width=480),
            ),
            sizing_mode="stretch_width",
        )


def _interval_names(name, cuts):
    edges = [0.0, *cuts]
    out = [f"{name}[{edges[i]:g},{edges[i + 1]:g})" for i in range(len(cuts))]
    return out + [f"{name}[{cuts[-1]:g},inf)"]
