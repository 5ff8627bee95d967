"""The state of one browser session: the loaded data, the column roles and the design and options
a cohort is built from (model, terms and forms, cut points, penalty, ties, backend): Describe,
Sensitivity, Timing and Bayes build their cohorts here too, and a data change resets the design
with the roles in one step.  The workbench's kept fits and the jobs that fit them are
app/survival/state.py's Workbench; the OMOP, SCCS, Bayesian and GWAS pages keep their own state
in their folders.

Views read and write this store; nothing here imports Panel widgets, so it is tested without a
browser (tests/app/data/test_app_store.py). Reading files and queries is in loading.py, the
analysis spec and its script in script.py; numerics stay in engine/.

Two kinds of data:
- a DataFrame (a bundled sample, an uploaded CSV/Parquet file, a DuckDB query result), and
- a simulated cohort (engine.simulate), held as the engine's Cohort because N x P dense columns
  (200,000 x 500) would not fit a DataFrame; its columns are time, event, strata and x0..x{P-1}.
"""

from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import param

import engine

from ..shell.caught_warnings import collected
from ..shell.choices import BACKENDS, PENALTIES, SOLVERS, SURVIVAL_MODELS, TIES
from .loading import DataLoadError, query_duckdb, read_upload
from .model_terms import check_form, formula_text, read_formula, rhs_text
from .recode import apply_step
from .samples import ROLE_GUESSES, SAMPLES
from .script import AnalysisSpec, jsonable

SIMULATED_COLUMNS = ("time", "event", "strata")
MAX_PREVIEW_ROWS = 200


def upload_source(filename: str) -> dict:
    """The data source of an uploaded file (for the spec and the script)."""
    kind = "parquet" if Path(filename).suffix.lower() in (".parquet", ".pq") else "csv"
    return {"kind": kind, "name": filename, "label": f"file: {filename}"}


def duckdb_source(path: str, sql: str) -> dict:
    return {"kind": "duckdb", "path": path.strip(), "sql": sql.strip(),
            "label": f"DuckDB: {path.strip() or 'samples'}"}


def numbered(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose rows are labelled 1..n: the engine names bad rows by label, so its
    messages count rows as R, a spreadsheet and the preview do (the first row is row 1)."""
    out = df.copy()
    out.index = pd.RangeIndex(1, len(out) + 1)
    return out


def _as_list(value) -> list:
    """A role's value as a list of column names (None: none; strata: already a list)."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def parse_cut_points(text: str, what: str = "cut point") -> list[float]:
    """'10, 20.5' -> [10.0, 20.5]; a DataLoadError naming the bad entry (a ``what``) otherwise."""
    values = []
    for part in re.split(r"[,;\s]+", text.strip()):
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise DataLoadError(f"{what} {part!r} is not a number; type numbers separated "
                                "by commas, e.g. 10, 30") from None
        if not math.isfinite(value) or value <= 0:
            raise DataLoadError(f"{what} {part!r} must be a positive, finite time")
        values.append(value)
    if not values:
        raise DataLoadError(f"type at least one {what}, e.g. 10")
    return sorted(set(values))


class Store(param.Parameterized):
    """Data, roles, design and options of one browser session."""

    # --- data --------------------------------------------------------------------------
    data = param.DataFrame(default=None, allow_None=True, doc="Loaded data (frame mode).")
    simulated = param.Parameter(default=None, doc="engine.Cohort of a simulated cohort.")
    source = param.Dict(default={}, doc="Where the data came from (for the script and spec).")
    columns = param.List(default=[], doc="Column names offered for roles.")
    data_version = param.Integer(default=0, doc="Bumped on every load; views redraw on it.")
    raw_data = param.DataFrame(default=None, allow_None=True,
                               doc="The table as loaded, before data_steps (undo starts here).")
    data_steps = param.List(default=[], doc="Recode/filter steps applied to the loaded table "
                                            "(app/data/recode.py), in order.")

    # --- roles -------------------------------------------------------------------------
    time = param.String(default=None, allow_None=True)
    start = param.String(default=None, allow_None=True)
    event = param.String(default=None, allow_None=True)
    event_codes = param.List(default=[], doc="Codes of the event column that count as events "
                                             "(empty: non-zero is an event).")
    treatment = param.String(default=None, allow_None=True)
    covariates = param.List(default=[])
    strata = param.List(default=[])
    id = param.String(default=None, allow_None=True)
    weights = param.String(default=None, allow_None=True)
    missing = param.Selector(objects=["stop", "drop"], default="stop",
                             doc="Rows missing a value in a role column: stop with the rows named "
                                 "(default), or drop them (complete-case analysis, counted in "
                                 "every result).")

    conf_type = param.Selector(objects=["log", "log-log", "plain"], default="log",
                               doc="The pointwise confidence limits of every Kaplan-Meier band "
                                   "and table (Describe and Results), as R's survfit conf.type "
                                   "(default log).")

    # --- design and options ------------------------------------------------------------
    cut_points = param.Dict(default={}, doc="covariate -> sorted cut times")
    forms = param.Dict(default={}, doc="covariate -> its form other than linear "
                                       "(model_terms.FORMS: ns3..ns5, rcs3..rcs5, poly2, "
                                       "poly3, categorical); absent: linear")
    interactions = param.List(default=[], doc="[a, b] pairs of covariates: the term a:b")
    model = param.Selector(objects=list(SURVIVAL_MODELS), default="cox")
    bands = param.List(default=[], doc="Poisson: the follow-up times where the baseline rate "
                                       "changes (the piecewise-exponential model)")
    cause = param.Integer(default=1, bounds=(1, None), doc="Fine-Gray: the cause of interest.")
    ties = param.Selector(objects=list(TIES), default="efron")
    penalty = param.Selector(objects=list(PENALTIES), default="none")
    strength = param.Number(default=1.0, bounds=(0, None), doc="The absolute lambda.")
    strength_as = param.Selector(objects=["fraction", "lambda"], default="fraction",
                                 doc="fraction: lambda = strength_fraction x lambda_max of the "
                                     "design (computed when needed); lambda: ``strength`` as "
                                     "typed, set by cross-validation or a reopened analysis.")
    strength_fraction = param.Number(default=0.05, bounds=(0, None))
    lambda_max = param.Number(default=None, allow_None=True,
                              doc="engine.lambda_max of the design named by lambda_max_key.")
    lambda_max_key = param.String(default=None, allow_None=True)
    unpenalized = param.List(default=[])
    backend = param.Selector(objects=list(BACKENDS), default="cpu")
    solver = param.Selector(objects=list(SOLVERS), default="auto")

    reset_note = param.String(default="", doc="What the last data change reset, in one line.")

    def __init__(self, **params):
        super().__init__(**params)
        self._loading = False
        self._given_up: set[str] = set()  # covariates that left for a role they still hold
        self.param.watch(self._roles_leave_covariates,
                         ["time", "start", "event", "id", "weights", "strata"])
        self.param.watch(self._terms_follow_covariates, ["covariates"])

    @contextmanager
    def _new_data(self):
        """While a data set is put in, roles are set wholesale: no column moves back."""
        loading, self._loading = self._loading, True
        try:
            yield
        finally:
            self._loading = loading

    # ------------------------------------------------------------------------------------
    # loading
    def load_sample(self, name: str) -> None:
        if name not in SAMPLES:
            raise DataLoadError(f"unknown sample {name!r}; choose one of {sorted(SAMPLES)}")
        sample = SAMPLES[name]
        # one round of watchers for the data and its roles (views redraw once per action)
        with self._new_data(), param.parameterized.batch_call_watchers(self):
            self._set_frame(sample.load(), {"kind": "sample", "name": name,
                                            "label": f"sample: {name}", "about": sample.about})
            self.param.update(
                time=sample.time, start=sample.start, event=sample.event,
                event_codes=list(sample.event_codes), treatment=sample.treatment,
                covariates=list(sample.covariates), id=sample.id, missing=sample.missing,
            )

    def load_upload(self, filename: str, content: bytes) -> None:
        self.load_frame(read_upload(filename, content), upload_source(filename))

    def load_duckdb(self, path: str, sql: str) -> None:
        self.load_frame(query_duckdb(path, sql), duckdb_source(path, sql))

    def load_frame(self, df: pd.DataFrame, source: dict) -> None:
        """Hold ``df`` (read in a worker by loading.py) with roles guessed from its columns."""
        with self._new_data(), param.parameterized.batch_call_watchers(self):
            self._set_frame(df, source)
            self.guess_roles()

    def load_simulated(self, n: int, p: int, density: float = 0.05, n_strata: int = 1,
                       seed: int = 0, cohort=None) -> None:
        """Hold engine.simulate(n, p, density, n_strata, seed) (or the given, already simulated
        cohort) with its roles: time, event, strata and every x column a covariate."""
        try:
            cohort = cohort if cohort is not None else engine.simulate(int(n), int(p), density=float(density),
                                     n_strata=int(n_strata), seed=int(seed))
        except (ValueError, engine.CohortError) as exc:
            raise DataLoadError(f"cannot simulate that cohort: {exc}") from None
        with self._new_data(), param.parameterized.batch_call_watchers(self):
            self.simulated = cohort
            self.data = None
            self.source = {"kind": "simulated", "n": int(n), "p": int(p), "density": float(density),
                           "n_strata": int(n_strata), "seed": int(seed),
                           "label": f"simulated N={int(n):,} P={int(p)}"}
            self.columns = [*SIMULATED_COLUMNS[: 3 if n_strata > 1 else 2], *cohort.names]
            self._reset_design()
            self.param.update(time="time", start=None, event="event", event_codes=[],
                              treatment=cohort.names[0], covariates=list(cohort.names),
                              strata=["strata"] if n_strata > 1 else [], id=None, weights=None,
                              data_steps=[])
            self.data_version += 1

    def _set_frame(self, df: pd.DataFrame, source: dict) -> None:
        df = numbered(df)
        df.columns = [str(c) for c in df.columns]
        with self._new_data(), param.parameterized.batch_call_watchers(self):
            self.simulated = None
            self.data = df
            self.source = source
            self.columns = list(df.columns)
            self._reset_design()
            self.param.update(time=None, start=None, event=None, event_codes=[], treatment=None,
                              covariates=[], strata=[], id=None, weights=None, data_steps=[],
                              missing="stop")
            self.data_version += 1

    # recode and filter (app/data/recode.py): each step a new data version, roles kept

    def apply_data_step(self, step: dict) -> None:
        """Apply a recode/filter step to the loaded table (DataLoadError if it cannot)."""
        if self.data is None:
            raise DataLoadError("recode and filter work on a loaded table (not a simulated "
                                "cohort)")
        df = apply_step(self.data, step)
        if not self.data_steps:
            self.raw_data = self.data
        self._replace_frame(df, [*self.data_steps, step])

    def apply_data_steps(self, steps: list) -> None:
        """Apply saved steps in order (reopening an analysis); all or none."""
        if not steps:
            return
        if self.data is None:
            raise DataLoadError("recode and filter work on a loaded table (not a simulated "
                                "cohort)")
        raw, df = (self.raw_data, self.data) if self.data_steps else (self.data, self.data)
        for step in steps:
            df = apply_step(df, step)
        self.raw_data = raw
        self._replace_frame(df, [*self.data_steps, *steps])

    def undo_data_step(self) -> None:
        """Drop the last step: the loaded table with the steps before it."""
        if not self.data_steps:
            return
        df, steps = self.raw_data, self.data_steps[:-1]
        for step in steps:
            df = apply_step(df, step)
        self._replace_frame(df, steps)

    def _replace_frame(self, df: pd.DataFrame, steps: list) -> None:
        """The table after ``steps``; a role whose column went with an undone step (a
        propensity-score weight column) is cleared."""
        df = numbered(df)
        kept = set(df.columns)
        gone = {role: None for role in ("time", "start", "event", "treatment", "id", "weights")
                if getattr(self, role) is not None and getattr(self, role) not in kept}
        with param.parameterized.batch_call_watchers(self):
            self.param.update(data=df, columns=list(df.columns), data_steps=steps, reset_note="",
                              covariates=[c for c in self.covariates if c in kept],
                              strata=[c for c in self.strata if c in kept], **gone)
            self.data_version += 1

    def _roles_leave_covariates(self, *events) -> None:
        """A column chosen as time, start, event, id, weights or a stratum leaves the
        covariates (and their cut points and the unpenalized list): it cannot be both. A column
        that left the covariates that way comes back when it is no longer chosen."""
        if self._loading:
            return
        taken = self.role_columns()
        back = [c for e in events for c in _as_list(e.old)
                if c in self._given_up and c not in taken and c not in self.covariates]
        leaving = taken & set(self.covariates)
        self._given_up = (self._given_up | leaving) - set(back)
        if not (back or taken & (set(self.covariates) | set(self.cut_points)
                                 | set(self.unpenalized))):
            return
        covariates = [c for c in self.covariates if c not in taken]
        if back:  # in their places among the columns
            order = {c: k for k, c in enumerate(self.columns)}
            covariates = sorted(dict.fromkeys([*covariates, *back]),
                                key=lambda c: order.get(c, len(order)))
        self.param.update(
            covariates=covariates,
            unpenalized=[c for c in self.unpenalized if c not in taken],
            cut_points={k: v for k, v in self.cut_points.items() if k not in taken})

    def _terms_follow_covariates(self, *events) -> None:
        """A covariate that leaves takes its spline form and interactions with it."""
        kept = set(self.covariates)
        forms = {c: f for c, f in self.forms.items() if c in kept}
        pairs = [p for p in self.interactions if set(p) <= kept]
        if forms != self.forms or pairs != self.interactions:
            self.param.update(forms=forms, interactions=pairs)

    def role_columns(self) -> set[str]:
        """The columns chosen as time, start, event, id, weights or strata."""
        return {self.time, self.start, self.event, self.id, self.weights, *self.strata} - {None}

    def explain(self, message: str) -> str:
        """The engine's message in the app's words: an R-style 1/2 status points at the Event
        codes box instead of an API flag."""
        if ("codes other than 0/1" in message and self.event is not None
                and not self.event_codes and not self.competing_risks):
            codes = self.event_code_options()
            return (f"the event column {self.event!r} has codes {codes}, not 0/1. If it is "
                    "R's Surv coding (1 = censored, 2 = event), choose 2 in the Event codes "
                    "box (Data tab); if the codes are causes of competing events, choose the "
                    "Fine-Gray model (Design tab); or recode the column (Recode and filter).")
        return re.sub(r'pass missing="drop"( to Cohort.from_frame)?',
                      "choose 'drop them (complete-case analysis)' under Rows with missing "
                      "values (Data tab)", message)

    def _reset_design(self) -> None:
        """A new data set starts from Cox with no strata, cut points or unpenalized columns and
        the penalty as a fraction of its own lambda_max; ``reset_note`` says in one line what
        was changed (empty when nothing was)."""
        was = []
        if self.model != "cox":
            was.append(f"model back to Cox (was {self.model})")
        if self.strength_as == "lambda" and self.penalty != "none":
            was.append(f"penalty back to {self.strength_fraction:.3g} x lambda_max of the new "
                       f"data (was lambda {self.strength:.4g})")
        if self.strata:
            was.append(f"strata cleared (were {', '.join(self.strata)})")
        if self.cut_points:
            was.append(f"cut points cleared (on {', '.join(self.cut_points)})")
        if self.bands:
            was.append("follow-up bands cleared")
        if self.unpenalized:
            was.append("unpenalized list cleared")
        if self.forms or self.interactions:
            was.append("splines and interactions cleared")
        self._given_up = set()
        self.param.update(cut_points={}, bands=[], unpenalized=[], strata=[], model="cox",
                          cause=1,
                          forms={}, interactions=[],
                          strength_as="fraction", lambda_max=None, lambda_max_key=None,
                          reset_note="New data: " + "; ".join(was) + "." if was else "")

    def guess_roles(self) -> None:
        """Roles from usual column names; every other numeric column a covariate."""
        lower = {c.lower(): c for c in self.columns}

        def pick(role):
            return next((lower[g] for g in ROLE_GUESSES[role] if g in lower), None)

        time_col, event_col, start_col, id_col = pick("time"), pick("event"), pick("start"), pick("id")
        if time_col is None:
            numeric = [c for c in self.columns if pd.api.types.is_numeric_dtype(self.data[c])]
            time_col = numeric[0] if numeric else None
        taken = {time_col, event_col, start_col, id_col} - {None}
        if start_col is not None and id_col is None:
            start_col = None
        covs = [c for c in self.columns if c not in taken
                and pd.api.types.is_numeric_dtype(self.data[c])]
        treat = pick("treatment")
        self.param.update(time=time_col, event=event_col, start=start_col, id=id_col,
                          covariates=covs, treatment=treat if treat in covs else None)

    # ------------------------------------------------------------------------------------
    # reading
    @property
    def loaded(self) -> bool:
        return self.data is not None or self.simulated is not None

    @property
    def n_rows(self) -> int:
        if self.simulated is not None:
            return self.simulated.n
        return 0 if self.data is None else len(self.data)

    def column(self, name: str) -> pd.Series:
        """Any offered column as a Series (simulated x columns densified, one at a time)."""
        if self.simulated is not None:
            c = self.simulated
            if name == "time":
                return pd.Series(c.time, name=name)
            if name == "event":
                return pd.Series(c.event, name=name)
            if name == "strata":
                return pd.Series(c.strata if c.strata is not None else np.zeros(c.n, int), name=name)
            j = c.names.index(name)
            return pd.Series(c.X[:, j].toarray().ravel(), name=name)
        return self.data[name]

    def preview(self, rows: int = MAX_PREVIEW_ROWS) -> pd.DataFrame:
        if self.simulated is not None:
            c = self.simulated
            k = min(rows, c.n)
            shown = self.columns[: len(self.columns) - len(c.names)] + c.names[:12]
            return pd.DataFrame({name: self.column(name).iloc[:k] for name in shown})
        return pd.DataFrame() if self.data is None else self.data.head(rows)

    @property
    def competing_risks(self) -> bool:
        """Fine-Gray reads the event column's codes as causes (0 censored, 1..k causes)."""
        return self.model == "fine_gray"

    def event_column_name(self) -> str | None:
        """The event column the cohort uses: derived as ``<event>_event`` when codes are set."""
        if self.event is None or not self.event_codes or self.competing_risks:
            return self.event
        name = f"{self.event}_event"
        while name in self.columns:
            name += "_"
        return name

    def event_indicator(self) -> pd.Series:
        """1 for rows with an event (one of the chosen codes, or non-zero), else 0."""
        values = self.column(self.event)
        if self.event_codes and not self.competing_risks:
            return values.isin(self.event_codes).astype(int)
        numeric = pd.to_numeric(values, errors="coerce")
        return (numeric.fillna(0) != 0).astype(int)

    def event_code_options(self) -> list:
        """Distinct values of the event column (up to 20), for the codes picker."""
        if self.event is None or not self.loaded:
            return []
        values = self.column(self.event).dropna().unique()
        if len(values) > 20:
            return []
        return sorted(values.tolist(), key=lambda v: (str(type(v)), v))

    def km_frame(self) -> pd.DataFrame:
        """time, 0/1 event, event codes (0 censored, 1..k causes; NaN where not numeric), and
        start, id and weights (when set) for Kaplan-Meier and cumulative incidence curves."""
        out = {"time": pd.to_numeric(self.column(self.time), errors="coerce"),
               "event": self.event_indicator(),
               "codes": pd.to_numeric(self.column(self.event), errors="coerce")}
        if self.start:
            out["start"] = pd.to_numeric(self.column(self.start), errors="coerce")
            if self.id:
                out["id"] = self.column(self.id)
        if self.weights:
            out["weights"] = pd.to_numeric(self.column(self.weights), errors="coerce")
        return pd.DataFrame(out)

    # ------------------------------------------------------------------------------------
    # building the cohort
    def model_formula(self) -> str | None:
        """The covariate terms as the engine's formula when the design has splines or
        interactions (None: every covariate linear, the covariates list is used)."""
        if self.simulated is not None or not (self.forms or self.interactions):
            return None
        return rhs_text(self.covariates, self.forms, self.interactions)

    def formula_text(self) -> str:
        """The model as the Design tab's formula box shows it (strata included)."""
        if not self.covariates:
            return ""
        return formula_text(self.covariates, self.forms, self.interactions, self.strata)

    def apply_formula(self, text: str) -> None:
        """Set covariates, forms, interactions and strata from a typed formula, checked by
        building its cohort (rows missing a value dropped); the engine's CohortError or a
        DataLoadError, with nothing changed, when it cannot be fitted or shown."""
        if self.data is None:
            raise DataLoadError("formulas work on a loaded table (not a simulated cohort)")
        kwargs = {k: v for k, v in self.role_kwargs().items()
                  if k not in ("covariates", "formula", "strata")}
        with collected():
            cohort = engine.Cohort.from_frame(self.cohort_frame(), formula=text,
                                              **{**kwargs, "missing": "drop"})
        chosen = read_formula(cohort.formula)
        for column, form in chosen["forms"].items():
            check_form(column, form, int(self.data[column].nunique()))
        self._given_up = set()   # columns that were strata do not come back as covariates
        with param.parameterized.batch_call_watchers(self):
            self.param.update(strata=chosen["strata"], covariates=chosen["covariates"])
            self.param.update(forms=chosen["forms"], interactions=chosen["interactions"])

    def set_form(self, column: str, form: str) -> None:
        """Give a covariate a form (model_terms.FORMS); a DataLoadError, with nothing changed,
        for a form its distinct values cannot take (a categorical form of a continuous
        column)."""
        check_form(column, form, int(self.data[column].nunique()))
        forms = {k: v for k, v in self.forms.items() if k != column}
        self.forms = {**forms, **({} if form == "linear" else {column: form})}

    def role_kwargs(self) -> dict:
        """Keyword arguments of engine.Cohort.from_frame for the current roles (the covariates
        as a formula when the design has splines or interactions)."""
        kwargs = {"time": self.time, "event": self.event_column_name(),
                  "covariates": list(self.covariates), "strata": list(self.strata) or None,
                  "start": self.start, "id": self.id, "weights": self.weights}
        formula = self.model_formula()
        if formula is not None:
            kwargs["formula"] = formula
            del kwargs["covariates"]
        if self.missing == "drop":
            kwargs["missing"] = "drop"
        if self.competing_risks:
            kwargs["competing_risks"] = True
        return kwargs

    def cohort_frame(self) -> pd.DataFrame:
        """The data as the cohort reads it: with the derived event column when codes are set."""
        if self.event_codes and self.event is not None and not self.competing_risks:
            return self.data.assign(**{self.event_column_name(): self.event_indicator()})
        return self.data

    def _check_roles_set(self) -> None:
        if not self.loaded:
            raise DataLoadError("load data first (Data tab)")
        missing = [role for role in ("time", "event") if getattr(self, role) is None]
        if missing:
            raise DataLoadError(f"choose the {' and '.join(missing)} column(s) in the Data tab")
        if not self.covariates:
            raise DataLoadError("choose at least one covariate in the Data tab")

    def make_cohort_factory(self):
        """A callable building the engine Cohort from a snapshot of the data and roles."""
        self._check_roles_set()
        if self.simulated is not None:
            base, covs = self.simulated, list(self.covariates)
            strata = bool(self.strata)
            if (covs == base.names and strata == (base.strata is not None)
                    and not self.competing_risks):
                return lambda: base

            competing = self.competing_risks

            def subset():
                idx = [base.names.index(c) for c in covs]
                return engine.Cohort.from_arrays(time=base.time, event=base.event,
                                                 X=base.X[:, idx], names=covs,
                                                 strata=base.strata if strata else None,
                                                 competing_risks=competing)
            return subset
        frame, kwargs = self.cohort_frame(), self.role_kwargs()
        return lambda: engine.Cohort.from_frame(frame, **kwargs)

    def build_cohort(self):
        """The engine Cohort of the current data and roles (CohortError/DataLoadError if bad)."""
        with collected():
            return self.make_cohort_factory()()

    def validation_report(self) -> dict:
        """Counts and problems of the current data under the current roles, before any fit.

        Returns a dict: ok (bool), error (the engine's CohortError message or ""), rows, events,
        censored, censored_pct, subjects, strata, covariates (after encoding), warnings (list),
        problems (DataFrame: column, role, problem).
        """
        report = {"ok": False, "error": "", "rows": self.n_rows, "events": None,
                  "censored": None, "censored_pct": None, "subjects": None, "strata": None,
                  "covariates": None, "warnings": [], "problems": self.column_problems()}
        if not self.loaded:
            report["error"] = "no data loaded"
            return report
        if self.event is not None:
            try:
                events = int(self.event_indicator().sum())
                report["events"] = events
                report["censored"] = self.n_rows - events
                report["censored_pct"] = 100.0 * (self.n_rows - events) / max(self.n_rows, 1)
            except Exception:  # unreadable event column: the cohort error below names it
                pass
        try:
            with collected() as caught:
                cohort = self.make_cohort_factory()()
        except (engine.CohortError, DataLoadError, ValueError, KeyError) as exc:
            report["error"] = self.explain(str(exc))
            return report
        if self.competing_risks:
            counts = pd.Series(cohort.event[cohort.event > 0]).value_counts().sort_index()
            report["causes"] = {int(k): int(v) for k, v in counts.items()}
        report.update(ok=True, events=cohort.n_events, censored=cohort.n - cohort.n_events,
                      censored_pct=100.0 * (cohort.n - cohort.n_events) / cohort.n,
                      strata=cohort.n_strata, covariates=cohort.p,
                      subjects=None if cohort.id is None else int(pd.unique(cohort.id).size),
                      warnings=list(dict.fromkeys(caught)), dropped=dict(cohort.dropped),
                      n_dropped=cohort.n_dropped)
        return report

    def column_problems(self) -> pd.DataFrame:
        """Simple per-column checks of the role columns: missing values, text, negative times,
        single-valued covariates."""
        rows = []
        if not self.loaded:
            return pd.DataFrame(columns=["column", "role", "problem"])
        roles = [("time", self.time), ("start", self.start), ("event", self.event),
                 ("id", self.id), ("weights", self.weights)]
        roles += [("strata", s) for s in self.strata] + [("covariate", c) for c in self.covariates]
        if self.simulated is not None:
            return pd.DataFrame(rows, columns=["column", "role", "problem"])
        for role, col in roles:
            if col is None or col not in self.data.columns:
                continue
            s = self.data[col]
            n_missing = int(s.isna().sum())
            if n_missing:
                rows.append((col, role, f"{n_missing} missing value(s)"))
            if role in ("time", "start", "weights", "event"):
                num = pd.to_numeric(s, errors="coerce")
                bad = int((num.isna() & s.notna()).sum())
                if bad:
                    rows.append((col, role, f"{bad} value(s) that are not numbers"))
                elif role in ("time", "start", "weights") and (num < 0).any():
                    rows.append((col, role, f"{int((num < 0).sum())} negative value(s)"))
            if role == "covariate" and s.nunique(dropna=True) <= 1:
                rows.append((col, role, "a single value: it cannot be estimated"))
            if role == "covariate" and not pd.api.types.is_numeric_dtype(s):
                rows.append((col, role, f"text with {s.nunique()} levels: one-hot encoded "
                                        f"against its first level"))
        return pd.DataFrame(rows, columns=["column", "role", "problem"])

    # ------------------------------------------------------------------------------------
    # the analysis spec, the fit options and export
    # the penalty on the scale of lambda_max (engine.lambda_max)
    @param.depends("strength", watch=True)
    def _strength_typed(self) -> None:
        if not self._scaling:
            self.strength_as = "lambda"

    @param.depends("strength_fraction", watch=True)
    def _fraction_typed(self) -> None:
        self.strength_as = "fraction"
        self.apply_fraction()

    @param.depends("strength_as", watch=True)
    def _scale_chosen(self) -> None:
        self.apply_fraction()

    _scaling = False

    def apply_fraction(self) -> None:
        """In fraction mode, set ``strength`` to fraction x lambda_max when it is known."""
        lam = self.scaled_strength()
        if self.strength_as == "fraction" and lam is not None:
            self._scaling = True
            try:
                self.strength = lam
            finally:
                self._scaling = False

    def penalty_key(self) -> str:
        """What lambda_max depends on: the data, roles, design, model, ties, cause and
        unpenalized covariates (not the penalty's kind or strength)."""
        roles = [getattr(self, r) for r in ("time", "start", "event", "event_codes",
                                            "covariates", "strata", "id", "weights")]
        return json.dumps([self.data_version, roles, self.cut_points, self.forms,
                           self.interactions, self.model, self.fit_options().get("bands"),
                           self.effective_ties, self.cause if self.competing_risks else None,
                           self.fit_options()["unpenalized"]], default=str)

    def known_lambda_max(self) -> float | None:
        """lambda_max of the current design, if computed (by a fit, the path or CV)."""
        return self.lambda_max if self.lambda_max_key == self.penalty_key() else None

    def scaled_strength(self) -> float | None:
        """strength_fraction x lambda_max, to 4 significant digits (the lambda shown and
        fitted), or None while lambda_max is unknown."""
        top = self.known_lambda_max()
        return None if top is None else float(f"{self.strength_fraction * top:.4g}")

    def note_lambda_max(self, key: str, value: float) -> None:
        """Remember lambda_max of the design ``key`` (a finished fit, path or CV)."""
        self.param.update(lambda_max=float(value), lambda_max_key=key)
        self.apply_fraction()

    def lambda_max_kwargs(self) -> dict:
        """Keyword arguments of engine.lambda_max for the current design."""
        o = self.fit_options()
        return {"model": self.model, "penalty": self.penalty.lower(),
                "unpenalized": list(o["unpenalized"]), "ties": self.effective_ties,
                "cause": int(self.cause), "cut_points": o["cut_points"],
                **({"bands": o["bands"]} if "bands" in o else {}), "backend": self.backend}

    def penalty_object(self, lam: float | None = None):
        """engine.L1/L2 at ``lam`` (default the strength set), or None without a penalty."""
        if self.penalty == "none":
            return None
        return (engine.L1 if self.penalty == "L1" else engine.L2)(
            float(self.strength if lam is None else lam))

    def fit_options(self) -> dict:
        """Keyword arguments of engine.fit (besides the cohort and progress)."""
        unpen = [u for u in self.unpenalized if u in self.covariates] if self.penalty != "none" else []
        options = {"model": self.model, "ties": self.effective_ties,
                   "penalty": self.penalty_object(), "unpenalized": unpen,
                   "cut_points": dict(self.cut_points) or None, "backend": self.backend,
                   "solver": self.solver}
        if self.competing_risks:
            options["cause"] = int(self.cause)
        if self.model == "poisson" and self.bands:
            options["bands"] = list(self.bands)
        return options

    @property
    def effective_ties(self) -> str:
        """Fine-Gray uses Breslow ties (as cmprsk::crr); Cox the chosen ones."""
        return "breslow" if self.model == "fine_gray" else self.ties

    def cause_options(self) -> list[int]:
        """Positive integer codes of the event column (the causes Fine-Gray can target)."""
        return [int(c) for c in self.event_code_options()
                if isinstance(c, (int, float, np.integer, np.floating)) and c > 0
                and float(c).is_integer()]

    def analysis_spec(self) -> AnalysisSpec:
        """The whole analysis: data source, roles, design, fit options."""
        data = {k: v for k, v in self.source.items() if k != "about"}
        if self.data_steps:
            data["steps"] = [dict(step) for step in self.data_steps]
        return AnalysisSpec(
            data=data,
            roles={"time": self.time, "start": self.start, "event": self.event,
                   "event_codes": [jsonable(c) for c in self.event_codes],
                   "treatment": self.treatment, "covariates": list(self.covariates),
                   "strata": list(self.strata), "id": self.id, "weights": self.weights},
            design={"cut_points": {k: list(v) for k, v in self.cut_points.items()},
                    "forms": dict(self.forms),
                    "interactions": [list(p) for p in self.interactions],
                    "formula": self.model_formula(),
                    "bands": list(self.fit_options().get("bands", []))},
            options={"model": self.model, "ties": self.effective_ties, "penalty": self.penalty,
                     "cause": int(self.cause) if self.competing_risks else None,
                     "strength": float(self.strength),
                     "strength_as": self.strength_as,
                     "strength_fraction": float(self.strength_fraction),
                     "lambda_max": self.known_lambda_max(),
                     "unpenalized": list(self.fit_options()["unpenalized"]),
                     "backend": self.backend, "solver": self.solver,
                     "missing": self.missing})

    def spec(self) -> dict:
        """The analysis spec as JSON-able data (a kept fit's record of what was asked)."""
        return self.analysis_spec().to_dict()

    def spec_json(self) -> str:
        return self.analysis_spec().to_json()

    def chosen_lambda(self) -> float | None:
        """The lambda a fit would use now (None in fraction mode while lambda_max is unknown)."""
        if self.penalty == "none":
            return None
        return self.scaled_strength() if self.strength_as == "fraction" else self.strength

    def upload_frame(self) -> pd.DataFrame | None:
        """The data when they are an upload (a kept fit holds them for the analysis file)."""
        return self.data if self.source.get("kind") in ("csv", "parquet") else None

    def python_script(self) -> str:
        """A Python script that reproduces the analysis with the engine's public API."""
        return self.analysis_spec().python_script()

    def subsample_factory(self, n: int, seed: int = 0, replace: bool = False):
        """A callable building a cohort of ``n`` rows drawn at random: without replacement (at
        most all rows; whole subjects when there are ids), or with replacement when ``replace``
        and ``n`` exceeds the data (rows only: data with subject ids are never duplicated)."""
        self._check_roles_set()
        if self.simulated is not None:
            base = self.simulated
            covs, strata, competing = list(self.covariates), bool(self.strata), self.competing_risks

            def sub():
                rng = np.random.default_rng(seed)
                with_replacement = replace and n > base.n
                size = n if with_replacement else min(n, base.n)
                rows = np.sort(rng.choice(base.n, size=size, replace=with_replacement))
                idx = [base.names.index(c) for c in covs]
                return engine.Cohort.from_arrays(
                    time=base.time[rows], event=base.event[rows], X=base.X[rows][:, idx],
                    names=covs, strata=None if base.strata is None or not strata
                    else base.strata[rows], competing_risks=competing)
            return sub
        frame, kwargs = self.cohort_frame(), self.role_kwargs()
        if len(frame) > n:
            if self.id:
                ids = pd.unique(frame[self.id])
                rng = np.random.default_rng(seed)
                keep = set(rng.permutation(ids)[: max(1, int(len(ids) * n / len(frame)))].tolist())
                frame = frame[frame[self.id].isin(keep)]
            else:
                frame = frame.sample(n=n, random_state=seed).sort_index()
        elif replace and len(frame) < n and not self.id:
            frame = frame.sample(n=n, replace=True, random_state=seed)
        frame = frame.reset_index(drop=True)

        def build():
            with collected():
                return engine.Cohort.from_frame(frame, **kwargs)
        return build
