"""The Sensitivity tab's grid, apart from its widgets: the choices on every axis of
engine.sensitivity_study taken from the current analysis, their count and estimated cost from
the store alone, the study run with its negative controls, and the script that reproduces it.

Every axis lists the current analysis's choice first (its base); the others vary it:
adjustment sets, subgroups, strata designs (Yang et al. 2024), penalties as fractions of
lambda_max (engine.lambda_max, the Fit tab's scale), ends of follow-up (administrative
censoring), the treatment's effect split at cut points, and the tie rule.  Negative-control
outcomes calibrate the estimates (Schuemie et al. 2014, 2018).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import engine

from ..data import memory
from ..data.loading import DataLoadError
from ..data.script import cohort_lines, jsonable
from ..data.store import Store

MAX_LEVELS = 8          # a subgroup or stratum column offers at most this many levels
ADJUST = {"all covariates": "all", "the treatment alone": "alone",
          "each other covariate dropped in turn": "drop"}
# penalty choices beside none: (kind, fraction of lambda_max)
PENALTIES = {"L1 at 0.1 x lambda_max": ("L1", 0.1), "L1 at 0.02 x lambda_max": ("L1", 0.02),
             "L2 at 0.1 x lambda_max": ("L2", 0.1), "L2 at 0.01 x lambda_max": ("L2", 0.01)}
AXES = ("covariates", "subgroup", "strata", "penalty", "follow_up", "cut_points", "ties")
LAYOUT = ("strata", "cut_points", "ties")


@dataclass
class Picks:
    """What the user chose on the tab; times are parsed already."""

    adjust: list = field(default_factory=lambda: ["all", "alone", "drop"])
    subgroup: str | None = None
    ties: list = field(default_factory=list)
    strata: list = field(default_factory=lambda: ["own"])   # "own", "none" or columns
    penalties: list = field(default_factory=lambda: ["own"])  # "own", "none" or PENALTIES
    follow_up: list = field(default_factory=list)   # ends besides the whole follow-up
    cuts: list = field(default_factory=list)        # the treatment split at these times
    controls: list = field(default_factory=list)    # negative-control event columns


@dataclass
class Plan:
    """A study ready to run: engine.sensitivity_study's arguments, the script's text of each
    choice (axis -> label -> code) and the negative controls."""

    cohort: object
    interest: list
    vary: dict
    base: dict
    code: dict
    controls: dict
    notes: dict            # strata label -> note for its rows
    max_memory: float
    max_seconds: float


@dataclass
class Outcome:
    """A finished study: the result, its table (calibrated where controls were given), the
    controls' estimates and their empirical null, and the lambda_max the penalties scale."""

    result: object
    table: pd.DataFrame
    controls: pd.DataFrame | None = None
    null: object = None
    lambda_max: float | None = None
    warnings: list = field(default_factory=list)


def check_design(store: Store) -> None:
    """DataLoadError naming what the study needs and the analysis lacks."""
    if not store.treatment or store.treatment not in store.covariates:
        raise DataLoadError("set the Treatment / grouping column on the Data tab and keep it "
                            "among the covariates: the study reports its hazard ratio")
    if store.model != "cox":
        raise DataLoadError("sensitivity studies are run for Cox models (event 0/1)")


def columns_of(cohort, column: str, interactions: bool = True) -> list[str]:
    """The cohort's names of a data column's terms: from the formula's terms that read it
    (its spline basis, "ns(age, df=3)[1]", and with ``interactions`` the products with it,
    "fin:age") when the cohort was built from one, else itself or its one-hot levels."""
    formula = cohort.formula
    if formula is None:
        return [n for n in cohort.names if n == column or n.startswith(column + "[")]
    return [n for term, names in formula.terms.items() if column in formula.reads[term]
            and (interactions or ":" not in term) for n in names]


def few_levels(store: Store, strata: bool = False) -> list[str]:
    """Columns with at most MAX_LEVELS levels, besides the time, event, entry, id and weights
    (and, to stratify by, the treatment and columns with missing values)."""
    if store.data is None:
        return []
    roles = {store.time, store.event, store.start, store.id, store.weights}
    if strata:
        roles |= {store.treatment, *store.strata}
    return [c for c in store.columns if c not in roles
            and store.data[c].nunique(dropna=True) <= MAX_LEVELS
            and not (strata and store.data[c].isna().any())]


def event_columns(store: Store) -> list[str]:
    """0/1 columns other than the roles and covariates: candidate negative-control outcomes."""
    if store.data is None:
        return []
    used = {store.time, store.event, store.start, store.id, store.weights, *store.covariates,
            *store.strata}
    return [c for c in store.columns if c not in used
            and pd.api.types.is_numeric_dtype(store.data[c])
            and set(pd.unique(store.data[c].dropna())) <= {0, 1}]


def strata_label(store: Store, pick: str) -> str:
    """The label of a strata design: "own" (the analysis's), "none" or a column."""
    if pick == "own":
        return (f"as analysed (by {', '.join(store.strata)})" if store.strata
                else "none (as analysed)")
    return "none" if pick == "none" else f"by {pick}"


def strata_options(store: Store, controls=()) -> dict:
    """Label -> pick of the strata designs: the analysis's own first; not the columns named
    as negative-control outcomes."""
    picks = ["own", *(["none"] if store.strata else []),
             *(c for c in few_levels(store, strata=True) if c not in controls)]
    return {strata_label(store, p): p for p in picks}


def penalty_options(store: Store) -> dict:
    """Label -> pick of the penalties: the analysis's own first, then none and PENALTIES."""
    own = store.penalty_object()
    if own is None:
        return {"none (as analysed)": "own", **{k: k for k in PENALTIES}}
    return {f"{type(own).__name__}({own.lam:g}) as analysed": "own", "none": "none",
            **{k: k for k in PENALTIES}}


def labels(store: Store, picks: Picks) -> dict:
    """axis -> the labels of its choices, base first, from the store alone (the cut-point
    designs by position: engine labels them when it runs)."""
    check_design(store)
    t = store.treatment
    others = [c for c in store.covariates if c != t]
    sets = (["all"] if "all" in picks.adjust or not picks.adjust else [])
    sets += [f"{t} alone"] if "alone" in picks.adjust else []
    sets += [f"without {c}" for c in others] if "drop" in picks.adjust else []
    out = {"covariates": sets}
    if picks.subgroup:
        levels = pd.unique(store.data[picks.subgroup].dropna())
        out["subgroup"] = ["everyone", *(f"{picks.subgroup} = {v}" for v in levels)]
    order = ["own", "none", *store.columns]          # the analysis's own first
    strata = [p for p in order if p in picks.strata and (p != "none" or store.strata)]
    out["strata"] = [strata_label(store, p) for p in strata or ["own"]]
    penalties = {v: k for k, v in penalty_options(store).items()}
    out["penalty"] = ([penalties[p] for p in penalties if p in picks.penalties]
                      or [next(iter(penalties.values()))])
    out["follow_up"] = ["whole follow-up", *(f"end at {x:g}" for x in picks.follow_up)]
    out["cut_points"] = ["as analysed", *(["split"] if picks.cuts else [])]
    ties = [store.effective_ties, *(x for x in ("breslow", "efron") if x != store.effective_ties)]
    out["ties"] = [x for x in ties if x in picks.ties] or [store.effective_ties]
    return out


def cut_designs(store: Store, picks: Picks, interest: list) -> list:
    """The cut-point designs: the analysis's own, then the treatment (its encoded columns,
    ``interest``) split at the chosen times.  engine labels them ("fin@20,40")."""
    own = {k: list(v) for k, v in store.cut_points.items()} or None
    if not picks.cuts:
        return [own]
    return [own, {**(own or {}), **{n: list(picks.cuts) for n in interest}}]


def sizes(store: Store, picks: Picks) -> dict:
    """axis -> number of choices (axes of one choice left out)."""
    return {a: len(v) for a, v in labels(store, picks).items() if len(v) > 1}


def cost(store: Store, picks: Picks, max_seconds: float) -> dict:
    """engine's estimate of the grid's bytes and seconds (engine.grid_cost_of_shape) from the
    store's shape (app.data.memory.fit_shape), and ``refused``: engine.check_budget's message when
    over the memory this session may use or ``max_seconds``, else ""."""
    chosen = labels(store, picks)
    n, p, density = memory.fit_shape(store)
    cuts = [len(v) for v in store.cut_points.values()] + [len(picks.cuts)]
    out = engine.grid_cost_of_shape(
        n, p, int(density * n * p), int(np.prod([len(v) for v in chosen.values()])),
        int(np.prod([len(chosen[a]) for a in LAYOUT])), max(cuts) + len(picks.follow_up))
    try:
        engine.check_budget(out, memory.allowed_bytes(), max_seconds)
        out["refused"] = ""
    except (MemoryError, TimeoutError) as exc:
        out["refused"] = str(exc)
    return out


def plan(store: Store, picks: Picks, max_seconds: float) -> Plan:
    """The study of the chosen axes on the store's cohort; DataLoadError naming what is
    missing."""
    chosen = labels(store, picks)
    t = store.treatment
    cohort = store.build_cohort()
    interest = columns_of(cohort, t, interactions=False)
    data = store.data
    if ((picks.subgroup or picks.controls or set(picks.strata) - {"own", "none"})
            and len(data) != cohort.n):
        raise DataLoadError("subgroups, strata by a column and negative controls need the "
                            "cohort's rows as loaded: rows were dropped for missing values; "
                            "filter them out on the Data tab first")
    vary, code, notes = {}, {}, {}

    def axis(name, items):           # items: label -> (value, code)
        vary[name] = {k: v for k, (v, _) in items.items()}
        code[name] = {k: c for k, (_, c) in items.items()}

    sets = {}
    for label in chosen["covariates"]:
        if label == "all":
            names = list(cohort.names)
        elif label.endswith(" alone"):
            names = interest
        else:
            gone = columns_of(cohort, label.removeprefix("without "))
            names = [n for n in cohort.names if n not in gone]
        sets[label] = (names, repr(names))
    axis("covariates", sets)
    if picks.subgroup:
        values, s = data[picks.subgroup], picks.subgroup
        axis("subgroup", {"everyone": (None, "None"), **{
            f"{s} = {v}": ((values == v).to_numpy(),
                           f"(df[{s!r}] == {jsonable(v)!r}).to_numpy()")
            for v in pd.unique(values.dropna())}})
    options = {strata_label(store, p): p for p in ["own", "none", *store.columns]}
    items = {}
    for label in chosen["strata"]:
        pick = options[label]
        if pick == "own":
            own = None if cohort.strata is None else np.asarray(cohort.strata)
            items[label] = (own, "None" if own is None else "cohort.strata")
        elif pick == "none":
            items[label] = (None, "None")
        else:
            items[label] = (data[pick].to_numpy(), f"df[{pick!r}].to_numpy()")
            if data[pick].nunique() == 1:
                notes[label] = f"{pick} has one level: the same as no strata"
    axis("strata", items)
    options = penalty_options(store)
    own = store.penalty_object()
    items = {}
    for label in chosen["penalty"]:
        pick = options[label]
        if pick == "own":
            items[label] = (own, "None" if own is None else
                            f"engine.{type(own).__name__}({own.lam!r})")
        elif pick == "none":
            items[label] = (None, "None")
        else:
            kind, fraction = PENALTIES[pick]
            items[label] = ((kind, fraction), f"engine.{kind}({fraction!r} * lambda_max)")
    axis("penalty", items)
    axis("follow_up", {"whole follow-up": (None, "None"),
                       **{f"end at {x:g}": (x, repr(x)) for x in picks.follow_up}})
    axis("cut_points", {k: (d, repr(d)) for k, d in enumerate(cut_designs(store, picks,
                                                                            interest))})
    axis("ties", {x: (x, repr(x)) for x in chosen["ties"]})
    unpenalized = list(dict.fromkeys([*store.fit_options()["unpenalized"], *interest]))
    base = {"ties": chosen["ties"][0], "unpenalized": unpenalized}
    controls = {}
    if picks.controls:
        if len(interest) != 1:
            raise DataLoadError(f"negative controls calibrate one coefficient; {t} is encoded "
                                f"as {len(interest)} columns ({', '.join(interest)})")
        controls = {c: data[c].to_numpy() for c in picks.controls}
    return Plan(cohort, interest, vary, base, code, controls, notes,
                memory.allowed_bytes(), max_seconds)


def lambda_max_args(p: Plan) -> dict:
    """engine.lambda_max's arguments for the penalties' scale: the full cohort, the base
    analysis (its ties, cut points, unpenalised covariates)."""
    return {"penalty": "l1", "unpenalized": p.base["unpenalized"], "ties": p.base["ties"],
            "cut_points": next(iter(p.vary["cut_points"].values()))}


def control_options(p: Plan) -> dict:
    """engine.fit options of the negative controls (less the penalty, the first of the
    penalty axis): the base analysis with a constant effect of the treatment (a split one has
    no single estimate to calibrate)."""
    cuts = {k: v for k, v in (next(iter(p.vary["cut_points"].values())) or {}).items()
            if k not in p.interest}
    return {"ties": p.base["ties"], "unpenalized": p.base["unpenalized"],
            "cut_points": cuts or None}


def run(p: Plan, progress=None, cancel=None) -> Outcome:
    """Fit the grid (engine.sensitivity_study), then the negative controls and the calibration;
    a calibration that cannot be made is a warning, the study stays."""
    vary = {a: dict(v) for a, v in p.vary.items()}
    vary["cut_points"] = list(vary["cut_points"].values())   # a dict is one design to engine
    top = None
    if any(isinstance(v, tuple) for v in vary["penalty"].values()):
        top = engine.lambda_max(p.cohort, **lambda_max_args(p))
        vary["penalty"] = {k: ((engine.L1 if v[0] == "L1" else engine.L2)(v[1] * top)
                               if isinstance(v, tuple) else v)
                           for k, v in vary["penalty"].items()}
    result = engine.sensitivity_study(p.cohort, p.interest, vary, base=p.base,
                                      max_memory=p.max_memory, max_seconds=p.max_seconds,
                                      progress=progress, cancel=cancel)
    table = result.table
    for label, note in p.notes.items():
        rows = table["strata"] == label
        table.loc[rows, "note"] = [f"{x}; {note}" if x else note for x in table.loc[rows, "note"]]
    out = Outcome(result, table, lambda_max=top)
    if p.controls:
        outcomes = {c: (p.cohort.time, e) for c, e in p.controls.items()}
        options = {**control_options(p), "penalty": next(iter(vary["penalty"].values()))}
        out.controls = engine.negative_control_estimates(p.cohort, outcomes, p.interest[0],
                                                         options, cancel=cancel)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out.null = engine.fit_null(out.controls["log_rr"], out.controls["se"])
                out.table = result.calibrate(out.controls)
            out.warnings = [str(w.message) for w in caught]
        except ValueError as exc:
            out.warnings = [f"no calibration: {exc}"]
    return out


def by_axis(result, table: pd.DataFrame) -> pd.DataFrame:
    """Each varied axis alone: for every choice of an axis, the rows of the variant holding the
    other axes at their base (first) choice.  Columns axis, choice, coefficient, variant, hr,
    hr_lower, hr_upper, error; the base variant appears once per axis."""
    choices = result.axes.choices
    varied = [a for a in AXES if len(choices[a]) > 1]
    first = {a: next(iter(choices[a])) for a in choices}
    parts = []
    for a in varied:
        at_base = np.ones(len(table), bool)
        for other in choices:
            if other != a:
                at_base &= (table[other] == first[other]).to_numpy()
        rows = table[at_base]
        parts.append(pd.DataFrame({"axis": a, "choice": rows[a], "coefficient":
                                   rows["coefficient"], "variant": rows["variant"],
                                   "hr": rows["hr"], "hr_lower": rows["hr_lower"],
                                   "hr_upper": rows["hr_upper"], "error": rows["error"]}))
    if not parts:
        return pd.DataFrame(columns=["axis", "choice", "coefficient", "variant", "hr",
                                     "hr_lower", "hr_upper", "error"])
    return pd.concat(parts, ignore_index=True)


def script(store: Store, p: Plan) -> str:
    """Python that rebuilds the cohort and runs the same study with the engine API."""
    lines = ['"""Reproduce a survscan sensitivity study with the engine API (generated by the '
             'app)."""', *cohort_lines(store.spec()), ""]
    if any(c.endswith("* lambda_max)") for c in p.code["penalty"].values()):
        args = ", ".join(f"{k}={v!r}" for k, v in lambda_max_args(p).items())
        lines += [f"lambda_max = engine.lambda_max(cohort, {args})", ""]
    lines.append("vary = {")
    for a, items in p.code.items():
        if a == "cut_points":          # a list: engine labels the designs
            lines.append(f"    {a!r}: [{', '.join(items.values())}],")
            continue
        lines.append(f"    {a!r}: {{")
        lines += [f"        {label!r}: {c}," for label, c in items.items()]
        lines.append("    },")
    lines += ["}", f"study = engine.sensitivity_study(cohort, {p.interest!r}, vary, "
                   f"base={p.base!r})", "table = study.table"]
    if p.controls:
        options = control_options(p)
        penalty = next(iter(p.code["penalty"].values()))
        args = ", ".join([f"{k}={v!r}" for k, v in options.items()] + [f"penalty={penalty}"])
        lines += ["controls = engine.negative_control_estimates(cohort, {",
                  *(f"    {c!r}: (cohort.time, df[{c!r}].to_numpy())," for c in p.controls),
                  f"}}, {p.interest[0]!r}, dict({args}))",
                  "table = study.calibrate(controls)"]
    lines += ["print(table)", ""]
    return "\n".join(lines)
