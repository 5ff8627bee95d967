"""What the Describe tab shows, from the store's data and roles: Table 1 by a group column,
Kaplan-Meier by group with the log-rank test, medians, survival at chosen times and the
restricted mean, and for competing risks the cumulative incidence with Gray's test.

Every number comes from engine (table_one, kaplan_meier, logrank_test, cumulative_incidence,
gray_test); this module only picks the rows and columns, as the user chose them, and words the
results. No Panel here, so it is tested without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import engine

MAX_GROUPS = 8          # a column with more levels is cut into quartiles (numbers) or refused
MAX_TABLE_COLUMNS = 40  # Table 1 rows offered by default
WEIGHTS = {  # the log-rank family: label -> (rho, gamma, weighting) of engine.logrank_test
    "Log-rank": (0.0, 0.0, None),
    "Gehan-Breslow (generalised Wilcoxon, n(t))": (0.0, 0.0, "gehan"),
    "Tarone-Ware (sqrt n(t))": (0.0, 0.0, "tarone-ware"),
    "Peto-Peto (Gehan-Wilcoxon type, rho = 1)": (1.0, 0.0, None),
    "Fleming-Harrington (p, q)": None,
}


class DescribeError(ValueError):
    """A choice the data cannot answer (shown as a message on the page)."""


@dataclass
class Groups:
    """Rows kept and their group labels (text, in the engine's sorted order by value)."""

    frame: pd.DataFrame          # time, event (0/1), codes, start, id, weights, group, strata,
                                 # row (the position in the loaded data)
    column: str | None
    names: dict                  # engine label -> label shown ("fin = 0", "age Q1 (17, 20]")
    dropped: dict = field(default_factory=dict)   # column -> rows left out (missing values)

    def shown(self, label) -> str:
        """The shown name of an engine label ("1.0" and 1 are the key "1")."""
        key = str(label)
        if _number(label):
            key = _key(float(label))
        return self.names.get(key, str(label))


def roles_ready(store) -> None:
    if not store.loaded or store.data is None:
        raise DescribeError("load a data file or a sample first (Data tab); the Describe tab "
                            "works on loaded data, not on simulated cohorts")
    if store.time is None or store.event is None:
        raise DescribeError("choose the time and event columns in the Data tab")


def group_values(values: pd.Series, column: str) -> tuple[pd.Series, dict]:
    """Group keys per row and their shown names: the column's levels, or its quartiles when a
    number column has more than MAX_GROUPS values."""
    present = values.dropna()
    if present.nunique() <= MAX_GROUPS:
        numeric = pd.api.types.is_numeric_dtype(values)
        names = {_key(v): f"{column} = {_key(v)}" for v in present.unique()}
        return (values if numeric else values.astype(object).where(values.notna())), names
    if not pd.api.types.is_numeric_dtype(values):
        raise DescribeError(f"{column!r} has {present.nunique()} levels; pick a column with at "
                            f"most {MAX_GROUPS} groups (or recode it in the Data tab)")
    quartile, edges = pd.qcut(values, 4, labels=False, retbins=True, duplicates="drop")
    names = {str(q + 1): f"{column} Q{q + 1} ({edges[q]:g}, {edges[q + 1]:g}]"
             for q in range(len(edges) - 1)}
    return quartile + 1, names


def _key(value) -> str:
    """A level as the engine labels it: str of the value, whole floats without '.0'."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def groups_of(store, column: str | None, strata: str | None = None, carry=()) -> Groups:
    """The rows with time, event (and group, strata) present, with their group keys; the
    ``carry`` columns ride along (missing values kept) as "carry:<name>"."""
    roles_ready(store)
    data = store.data
    frame = pd.DataFrame({"time": pd.to_numeric(data[store.time], errors="coerce"),
                          "event": store.event_indicator(),
                          "codes": event_codes(store), "row": np.arange(len(data))},
                         index=data.index)
    if store.start:
        frame["start"] = pd.to_numeric(data[store.start], errors="coerce")
        if store.id:
            frame["id"] = data[store.id]
    if store.weights:
        frame["weights"] = pd.to_numeric(data[store.weights], errors="coerce")
    names = {"all": "all"}
    if column:
        frame["group"], names = group_values(data[column], column)
    if strata:
        frame["strata"] = data[strata]
    for name in carry:
        frame[f"carry:{name}"] = data[name]
    used = {"time": store.time, "start": store.start, "id": store.id, "weights": store.weights,
            "group": column, "strata": strata}
    dropped = {}
    keep = np.ones(len(frame), dtype=bool)
    for key, name in used.items():
        if key in frame:
            missing = frame[key].isna().to_numpy() & keep
            if missing.any():
                dropped[name] = int(missing.sum())
                keep &= ~missing
    return Groups(frame[keep].reset_index(drop=True), column, names, dropped)


def event_codes(store) -> pd.Series:
    """The event column as 0 (censored) and cause codes: the chosen event codes when set
    (other codes become 0), else every positive whole-number code."""
    values = pd.to_numeric(store.column(store.event), errors="coerce").fillna(0)
    if store.event_codes:
        chosen = [float(c) for c in store.event_codes if _number(c)]
        values = values.where(values.isin(chosen), 0)
    return values.where((values > 0) & (values == values.round()), 0).astype(int)


def _number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def causes(store) -> list[int]:
    """Causes of a competing-risks outcome: at least two distinct positive codes that count as
    events (the chosen event codes, else the column's codes); [] for a single event type."""
    try:
        roles_ready(store)
    except DescribeError:
        return []
    found = sorted(int(c) for c in pd.unique(event_codes(store)) if c > 0)
    return found if len(found) >= 2 else []


def cohort_of(groups: Groups) -> engine.Cohort:
    frame = groups.frame
    return engine.Cohort.from_frame(
        frame, time="time", event="event", covariates=[],
        start="start" if "start" in frame else None, id="id" if "id" in frame else None,
        weights="weights" if "weights" in frame else None)


def labels_of(groups: Groups, key: str = "group"):
    return None if key not in groups.frame else groups.frame[key].to_numpy()


# ----------------------------------------------------------------------------------------
# Table 1
def default_table_columns(store, by: str | None) -> list[str]:
    """Every column but the outcome roles and the group column (at most MAX_TABLE_COLUMNS)."""
    roles = {store.time, store.start, store.event, store.id, store.weights, by}
    return [c for c in store.columns if c not in roles][:MAX_TABLE_COLUMNS]


def baseline_table(store, by: str | None, columns: list[str], nonnormal=(),
                   weights: str | None = None) -> tuple:
    """engine.table_one of the loaded data by ``by`` (rows missing the group left out, their
    count returned), weighted by the column ``weights``: (TableOne, rows left out)."""
    roles_ready(store)
    if not columns:
        raise DescribeError("choose at least one column to describe")
    data = subjects_at_entry(store)
    left_out = 0
    if by:
        present = data[by].notna()
        left_out = int((~present).sum())
        data = data[present]
    t1 = engine.table_one(data, by=by or None, columns=[c for c in columns if c != by],
                          nonnormal=[c for c in nonnormal if c in columns], weights=weights)
    return t1, left_out


def subjects_at_entry(store) -> pd.DataFrame:
    """One row per subject, as Table 1 counts them: with (start, stop] episodes and a subject
    id, each subject's first episode (the values at entry); otherwise every row."""
    data = store.data
    if not (store.start and store.id):
        return data
    first = data.sort_values([store.id, store.start], kind="stable")
    return first.drop_duplicates(subset=store.id, keep="first").sort_index()


def table_display(t1, by: str | None = None) -> pd.DataFrame:
    """Table 1 as one flat table of text cells (variable, level, then the groups, named
    "<by> = <level>", and the standardised differences "SMD <a> vs <b>")."""
    out = t1.table.reset_index()
    if by:
        groups = [g for g in t1.summary["group"].unique() if g != "Overall"]
        out = out.rename(columns={g: f"{by} = {g}" for g in groups})
    return out.rename(columns={c: f"SMD {c}" for c in t1.smd.columns})


# ----------------------------------------------------------------------------------------
# Kaplan-Meier and the log-rank family
def weights_of(choice: str, p: float = 0.0, q: float = 0.0) -> tuple:
    """(rho, gamma, weighting) of the chosen test."""
    if choice not in WEIGHTS:
        raise DescribeError(f"unknown test weights {choice!r}")
    return WEIGHTS[choice] if WEIGHTS[choice] is not None else (float(p), float(q), None)


CONF_TYPES = {"log (R's default)": "log", "log-log": "log-log", "plain": "plain"}


def survival_by(groups: Groups, conf_type: str = "log", start_time: float | None = None):
    """engine.kaplan_meier by the group keys (one curve when no group column); its bands and
    tables take the limits of ``conf_type`` (R's conf.type); conditional on being event-free
    at ``start_time`` when given (R's survfit(start.time=))."""
    return engine.kaplan_meier(cohort_of(groups), by=labels_of(groups), conf_type=conf_type,
                               start_time=start_time)


def followed_to(groups: Groups, start_time: float | None) -> Groups:
    """The rows followed to ``start_time`` or beyond (stop >= start_time): those a curve or
    test conditional on being event-free then counts (all rows when None)."""
    if start_time is None:
        return groups
    frame = groups.frame[groups.frame["time"] >= start_time].reset_index(drop=True)
    if frame.empty:
        raise DescribeError(f"no row is followed to {start_time:g}; choose an earlier time "
                            "to condition on")
    return Groups(frame, groups.column, groups.names, groups.dropped)


def logrank(groups: Groups, rho: float, gamma: float, weighting: str | None = None):
    """engine.logrank_test between the groups (within strata when chosen); None without a
    group column or with a single group."""
    if "group" not in groups.frame or groups.frame["group"].nunique() < 2:
        return None
    return engine.logrank_test(cohort_of(groups), by=labels_of(groups),
                               strata=labels_of(groups, "strata"), rho=rho, gamma=gamma,
                               weighting=weighting)


def km_caption(options, conf_type: str = "log", variance: str = "greenwood",
               start_time: float | None = None) -> str:
    """What the Kaplan-Meier figure shows, in words (a figure legend for the paper);
    ``variance`` as engine.KaplanMeier.variance."""
    parts = ["Kaplan-Meier survival by group" + (
        "" if start_time is None else f", conditional on being event-free at {start_time:g} "
        "(R's survfit(start.time=): the rows followed to then)")]
    if "CI bands" in options:
        how = ("" if variance == "greenwood" else
               f", {variance.replace('robust', 'robust (infinitesimal-jackknife) variance')}")
        parts.append(f"shaded: pointwise 95% CI ({conf_type}{how})")
    if "Censor marks" in options:
        parts.append("ticks: censored")
    if "Median lines" in options:
        parts.append("dashed: median survival")
    if "KMunicate table" in options:
        parts.append("table: number at risk, events and censored so far (KMunicate)")
    elif "Risk table" in options:
        parts.append("table: number at risk")
    return "; ".join(parts) + "."


def logrank_name(choice: str, rho: float, gamma: float) -> str:
    """The test as the user chose it: "Log-rank", "Peto-Peto", "Fleming-Harrington (p, q)"."""
    if choice == "Fleming-Harrington (p, q)":
        return f"Fleming-Harrington (p = {rho:g}, q = {gamma:g})"
    return choice.split(" (")[0]


def logrank_words(test, name: str, stratified: bool, start_time: float | None = None) -> str:
    """'Log-rank: chi-square = 3.84 on 1 df, p = 0.0501' (the test named as chosen, and its
    robust variance when case weights are not counts: engine.logrank_test)."""
    if test is None:
        return ""
    variance = test.spec.get("variance", "model")
    notes = (["stratified"] if stratified else []) + (
        [] if variance == "model" else [f"{variance} variance"]) + (
        [] if start_time is None else [f"from {start_time:g}"])
    label = f"{name} ({', '.join(notes)})" if notes else name
    return (f"{label}: chi-square = {test.statistic:.2f} on {test.df} df, "
            f"p = {p_text(test.p)}")


def trend_words(test) -> str:
    if test is None or len(test.table) < 3:
        return ""
    return (f"Test for trend (scores {', '.join(f'{s:g}' for s in test.scores)}): chi-square = "
            f"{test.trend_statistic:.2f} on 1 df, p = {p_text(test.trend_p)}")


def p_text(p: float) -> str:
    if not np.isfinite(p):
        return "NA"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}" if p < 0.001 else f"{p:.3g}"


def median_table(km, groups: Groups) -> pd.DataFrame:
    """Per group: n, events, median survival and its 95% CI (R's print(survfit)), with the
    curve's own confidence limits (``km.conf_type``)."""
    med = km.quantile([0.5], conf_type=km.conf_type).set_index("group")
    table = km.table
    rows = []
    for label in med.index:
        part = table[table["group"] == label]
        rows.append({"group": groups.shown(label),
                     "n": _count(part["at_risk"].iloc[0]) if len(part) else 0,
                     "events": _count(part["events"].sum()),
                     "median": med.loc[label, "median"], "lower 95%": med.loc[label, "lower"],
                     "upper 95%": med.loc[label, "upper"]})
    return pd.DataFrame(rows)


def median_display(med: pd.DataFrame) -> pd.DataFrame:
    """The median table as printed: 4 significant digits, "not reached" / "NA" for NaN (the
    curve, or its confidence limit, never falls to 0.5)."""
    out = med.astype(object)
    for column, missing in (("median", "not reached"), ("lower 95%", "NA"), ("upper 95%", "NA")):
        out[column] = [missing if pd.isna(x) else f"{x:.4g}" for x in med[column]]
    return out


def _count(value):
    value = float(value)
    return int(value) if value.is_integer() else round(value, 3)


def survival_at(km, groups: Groups, times) -> pd.DataFrame:
    """Survival at chosen times with 95% CI (R's summary(survfit, times=)), with the curve's
    own confidence limits (``km.conf_type``)."""
    at = km.at(times, conf_type=km.conf_type)
    out = at.assign(group=at["group"].map(groups.shown))
    return out[["group", "time", "at_risk", "events", "survival", "lower", "upper"]].rename(
        columns={"at_risk": "at risk", "lower": "lower 95%", "upper": "upper 95%"})


def risk_counts(km, groups: Groups, times, so_far: bool = False) -> pd.DataFrame:
    """At risk at each time with the events and censored since the time before
    (KaplanMeier.at), or, ``so_far``, since time 0 (one engine call per time, as KMunicate
    shows them)."""
    if so_far:
        risk = pd.concat([km.at([t], extend=True) for t in times], ignore_index=True)
    else:
        risk = km.at(times, extend=True)
    return risk.assign(group=risk["group"].map(groups.shown))


def rmst_table(km, groups: Groups, tau: float) -> pd.DataFrame:
    """Restricted mean survival time to ``tau`` by group with its SE and 95% limits (R's
    print(survfit, rmean=)), then each group's difference from the first with its p-value
    (survRM2's rmst2)."""
    r = km.rmst(tau).reset_index()
    r["group"] = r["group"].map(groups.shown)
    out = r.rename(columns={"lower": "lower 95%", "upper": "upper 95%"})
    if len(km.curves) > 1:
        diff = km.rmst_difference(tau)
        out = pd.concat([out, pd.DataFrame({
            "group": [f"difference: {groups.shown(g)} − {groups.shown(ref)}"
                      for g, ref in zip(diff["group"], diff["reference"])],
            "tau": diff["tau"], "rmst": diff["difference"], "se": diff["se"],
            "lower 95%": diff["lower"], "upper 95%": diff["upper"], "p": diff["p"]})],
            ignore_index=True)
    return out


def rates_by(groups: Groups, cause: int | None = None, per: float = 1000.0, breaks=None):
    """engine.incidence_rates per group (per ``per`` units of person-time, in the follow-up
    bands of ``breaks``), of any event or of one ``cause`` (the other causes end person-time
    without an event)."""
    frame = groups.frame
    if cause is not None:
        frame = frame.assign(event=(frame["codes"] == int(cause)).astype(int))
    return engine.incidence_rates(cohort_of(Groups(frame, groups.column, groups.names)),
                                  by=labels_of(groups), per=per, breaks=breaks)


def rates_tables(rates, groups: Groups, time_label: str) -> dict:
    """The incidence rates (by follow-up band when split), each group's rate ratio and
    difference against the first (95% limits), and a caption saying the unit and the
    limits."""
    table = rates.rates.reset_index()
    banded = "interval" in table
    per = f"{rates.per:,g}"
    table = pd.DataFrame({
        "group": table["group"].map(groups.shown),
        **({"follow-up": table["interval"]} if banded else {}),
        "events": table["events"].map(_count), "person-time": table["person_time"],
        f"rate per {per}": table["rate"], "lower 95%": table["lower"],
        "upper 95%": table["upper"]})
    comparisons = _compared(rates.comparisons, groups, "R", banded)
    if rates.variance == "exact":
        limits = ("exact Poisson 95% limits (Garwood) and exact rate ratios conditional on the "
                  "events of the two groups, as R's poisson.test; differences with Wald limits")
    else:
        limits = (f"Wald 95% limits on the log scale with the robust (sandwich) variance "
                  f"{rates.variance[len('robust '):]}, as a weighted Poisson model; "
                  "differences with Wald limits")
    bands = (" Follow-up split into bands (a, b] (R's survSplit): each band's own rates, the "
             "groups compared within it." if banded else "")
    return {"rates": table, "comparisons": comparisons,
            "caption": f"Events per {per} units of person-time ({time_label}); {limits}. "
                       "RR: rate ratio, RD: rate difference, each group against the first."
                       + bands}


def standard_strata(values: pd.Series, column: str, bands: list[float]) -> pd.Series:
    """The standard's stratum of each row: the column's bands (<= b1, (b1, b2], ..., > bk)
    at the numbers ``bands``, else its values (at most MAX_GROUPS of them); missing where the
    column is."""
    if bands:
        numbers = pd.to_numeric(values, errors="coerce")
        if numbers.notna().sum() < values.notna().sum():
            raise DescribeError(f"{column!r} is not a number column; standardise by its "
                                "values (leave the bands empty)")
        return pd.cut(numbers, [-np.inf, *bands, np.inf],
                      labels=band_labels(bands)).astype(object).where(numbers.notna())
    if values.dropna().nunique() > MAX_GROUPS:
        raise DescribeError(f"{column!r} has {values.dropna().nunique()} values; type the "
                            "bands to standardise in (e.g. 20, 30, 40)")
    return values.map(lambda v: v if pd.isna(v) else _key(v))


def band_labels(bands: list[float]) -> list[str]:
    """"<= b1", "(b1, b2]", ..., "> bk": the bands at the limits ``bands``, as the engine's
    incidence_rates and split_lexis label them."""
    inner = [f"({a:g}, {b:g}]" for a, b in zip(bands, bands[1:])]
    return [f"<= {bands[0]:g}", *inner, f"> {bands[-1]:g}"]


def parse_bands(text: str) -> list[float]:
    """'20, 30' -> [20.0, 30.0] (sorted, each once); a DescribeError naming the bad entry."""
    return _numbers(text, "band limits", "20, 30, 40")


def standard_rows(groups: Groups, values: pd.Series, column: str, bands: list[float],
                  cause: int | None = None, unit: float | None = None,
                  standard: str = "cohort") -> tuple:
    """(the groups' rows whose stratum of ``column`` is known, their strata, rows left out),
    the event being ``cause`` when given.  ``values``: one per row of the loaded data.  With
    ``unit`` (time units per unit of the column) the column is its value at time 0 and grows
    with follow-up: each row is cut where it crosses a band limit (engine.split_lexis), the
    pieces of a row one subject.  With a standard population's name (``standard``, one of
    engine.STANDARD_POPULATIONS) the column is an age and the bands are its age groups: the
    strata are the ages themselves (the engine places them), or the pieces' bands cut at
    the groups' limits."""
    frame = groups.frame
    if cause is not None:
        frame = frame.assign(event=(frame["codes"] == int(cause)).astype(int))
    named = standard in engine.STANDARD_POPULATIONS
    if named:
        bands = engine.standard_population(standard)["lower"].tolist()[1:]
    if unit is None and named:
        ages = _ages(values, column)[frame["row"].to_numpy()]
        known = np.isfinite(ages)
        kept = Groups(frame[known], groups.column, groups.names)
        return kept, ages[known], int((~known).sum())
    if unit is None:
        labels = standard_strata(values, column, bands).iloc[frame["row"].to_numpy()]
        known = labels.notna().to_numpy()
        kept = Groups(frame[known], groups.column, groups.names)
        return kept, labels[known].to_numpy(), int((~known).sum())
    if not bands:
        raise DescribeError(f"type the band limits of attained {column} (e.g. 40, 50, 60)")
    if not (isinstance(unit, (int, float)) and np.isfinite(unit) and unit > 0):
        raise DescribeError("type the positive number of time units per unit of "
                            f"{column} (52.18 for weeks and years of age)")
    origin = _ages(values, column)[frame["row"].to_numpy()]
    known = np.isfinite(origin)
    part = frame[known].assign(**{"scale:": origin[known]})
    if "id" not in part:
        part = part.assign(id=part["row"])          # a row's pieces are one subject
    pieces = engine.split_lexis(part, "time", "event", "scale:", bands, unit=float(unit),
                                start="start" if "start" in part else None, band="band:")
    kept = Groups(pieces.drop(columns=["scale:", "band:"]).reset_index(drop=True),
                  groups.column, groups.names)
    return kept, pieces["band:"].to_numpy(), int((~known).sum())


def _ages(values: pd.Series, column: str) -> np.ndarray:
    """The column as numbers (NaN where missing); a DescribeError when it holds text."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().sum() < values.notna().sum():
        raise DescribeError(f"{column!r} is not a number column: it cannot grow with follow-up "
                            "or be placed in a standard population's age groups")
    return numbers.to_numpy(float)


def standardized_by(kept: Groups, strata, per: float, standard: str = "cohort",
                    reference_rates: dict | None = None) -> tuple:
    """engine.standardized_rates (the standard: the cohort's person-time in each stratum, or
    a standard population) and engine.smr (the expected events at the cohort's stratum
    rates, or at ``reference_rates`` per ``per``: a population's) of the groups of
    standard_rows."""
    if kept.frame.empty:
        raise DescribeError("no row has a stratum: choose another column")
    cohort, by = cohort_of(kept), labels_of(kept)
    named = standard in engine.STANDARD_POPULATIONS
    return (engine.standardized_rates(cohort, strata, by=by, per=per, standard=standard),
            engine.smr(cohort, strata, by=by, reference_rates=reference_rates, per=per,
                       age_groups=standard if named else None))


def parse_rates(text: str) -> dict | None:
    """'15-19: 2.1; 20-24: 1.8' -> {"15-19": 2.1, "20-24": 1.8} (None when empty): a
    stratum's label, a colon and its rate, separated by semicolons (band labels hold commas);
    a DescribeError naming the bad entry."""
    out = {}
    for part in str(text or "").split(";"):
        if not part.strip():
            continue
        label, colon, rate = part.rpartition(":")
        try:
            value = float(rate)
        except ValueError:
            value = np.nan
        if not colon or not label.strip() or not (np.isfinite(value) and value >= 0):
            raise DescribeError(f"{part.strip()!r} is not 'stratum: rate' (a rate >= 0): type "
                                "e.g. 15-19: 2.1; 20-24: 1.8")
        out[label.strip()] = value
    return out or None


def standardized_tables(rates, ratios, groups: Groups, column: str, left_out: int,
                        time_label: str, unit: float | None = None) -> dict:
    """The directly standardised rates (with the crude ones) and their ratios and
    differences against the first group, the SMRs, and a caption saying the standard and
    the limits."""
    table = rates.rates.reset_index()
    per = f"{rates.per:,g}"
    standardized = pd.DataFrame({
        "group": table["group"].map(groups.shown), "events": table["events"].map(_count),
        "person-time": table["person_time"], f"crude per {per}": table["crude_rate"],
        f"standardised per {per}": table["rate"], "lower 95%": table["lower"],
        "upper 95%": table["upper"]})
    comparisons = _compared(rates.comparisons, groups, "SR")
    r = ratios.ratios.reset_index()
    smr = pd.DataFrame({"group": r["group"].map(groups.shown),
                        "observed": r["observed"].map(_count), "expected": r["expected"],
                        "SMR": r["smr"], "lower 95%": r["lower"], "upper 95%": r["upper"],
                        "p": r["p"]})
    if rates.variance == "exact":
        limits = ("Fay and Feuer's gamma 95% limits (R's epitools::ageadjust.direct); the SMR's "
                  "exact Poisson limits and test, as R's poisson.test")
    else:
        limits = (f"Wald 95% limits on the log scale with the robust (sandwich) variance "
                  f"{rates.variance[len('robust '):]}")
    missing = (f" {left_out:,} row{'s' if left_out > 1 else ''} without {column} left out."
               if left_out else "")
    expected = ("the whole cohort's rate" if ratios.expected_from == "the cohort's rates"
                else f"the given reference rates (per {per} units of person-time)")
    own = rates.standard.startswith("the cohort's")
    cut_at = "band limits" if own else "limits of the standard's age groups"
    by = (f"attained {column} (follow-up split where it crosses the {cut_at}, {unit:g} "
          f"units of {time_label} per unit of {column})" if unit else column)
    standard = ("the whole cohort's person-time in each" if own else f"{rates.standard}, "
                "weights " + ", ".join(f"{k} {w:.4f}" for k, w in rates.weights.items()))
    return {"standardized": standardized, "std_comparisons": comparisons, "smr": smr,
            "std_caption": f"Directly standardised by {by} ({len(rates.weights)} strata), "
                           f"the standard being {standard}; "
                           f"events per {per} units of person-time ({time_label}); {limits}. "
                           "SRR and SRD: ratio and difference of standardised rates (Wald), "
                           "each group against the first. SMR: observed events over those "
                           f"expected at {expected} in each stratum of {column}." + missing}


def _compared(c: pd.DataFrame, groups: Groups, prefix: str, banded: bool = False):
    """Each group against the reference: ratio and difference with their limits, named
    ``prefix`` + "R" and + "D" (RR and RD; SRR and SRD of standardised rates)."""
    ratio, difference = f"{prefix}R", f"{prefix}D"
    return pd.DataFrame({
        "group": [f"{groups.shown(g)} vs {groups.shown(r)}"
                  for g, r in zip(c["group"], c["reference"])],
        **({"follow-up": c["interval"]} if banded else {}),
        ratio: c["rate_ratio"], f"{ratio} lower": c["rr_lower"],
        f"{ratio} upper": c["rr_upper"], "p": c["p"], difference: c["rate_difference"],
        f"{difference} lower": c["rd_lower"], f"{difference} upper": c["rd_upper"]})


def parse_times(text: str) -> list[float]:
    """'26, 52' -> [26.0, 52.0]; a DescribeError naming the bad entry."""
    return _numbers(text, "times", "26, 52", least=0.0)


def _numbers(text: str, what: str, example: str, least: float | None = None) -> list[float]:
    """The comma-separated numbers of ``text``, sorted, each once: finite, and at least
    ``least`` when given; a DescribeError naming the bad entry."""
    out = []
    for part in str(text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise DescribeError(f"{part!r} is not a number: type {what} separated by commas, "
                                f"e.g. {example}") from None
        if not np.isfinite(value) or (least is not None and value < least):
            must = "finite numbers" if least is None else f"numbers >= {least:g}"
            raise DescribeError(f"{part!r}: {what} must be {must}")
        out.append(value)
    return sorted(set(out))


# ----------------------------------------------------------------------------------------
# competing risks
def incidence_by(groups: Groups, cause: int) -> pd.DataFrame:
    """engine.cumulative_incidence of ``cause`` per group (shown names), with the entry
    times, ids and weights set (R's robust variance)."""
    frame = groups.frame.assign(group=groups.frame["group"].map(groups.shown)
                                if "group" in groups.frame else "all")
    return engine.cumulative_incidence(
        frame, cause=int(cause), by="group", time="time", event="codes",
        **{role: role for role in ("start", "id", "weights") if role in frame})


def incidence_at(frame: pd.DataFrame, times) -> pd.DataFrame:
    """Each group's cumulative incidence at the chosen times with its SE and 95% limits (the
    curve's last step at or before each time, as R's summary(survfit, times=))."""
    rows = []
    for group, curve in frame.groupby("group", sort=False):
        last = np.searchsorted(curve["time"].to_numpy(), times, side="right") - 1
        rows.append(curve.iloc[last].assign(time=times, group=group))
    out = pd.concat(rows, ignore_index=True)
    return out[["group", "time", "cif", "std_err", "lower", "upper"]].rename(columns={
        "cif": "cumulative incidence", "std_err": "SE", "lower": "lower 95%",
        "upper": "upper 95%"})


def gray_unavailable(frame: pd.DataFrame) -> str:
    """Why Gray's test is not shown for these rows ("" when it is): cmprsk's test has neither
    entry times nor case weights."""
    if "start" in frame:
        return "Gray's test is not shown: it needs one row per subject, not (start, stop] rows."
    if "weights" in frame:
        return ("Gray's test is not shown: it has no case weights (the curves are weighted; "
                "compare them at a time with their confidence limits).")
    return ""


def gray(groups: Groups, cause: int):
    """engine.gray_test of ``cause`` between the groups (within strata), or None (one group,
    or rows it cannot test: gray_unavailable)."""
    if ("group" not in groups.frame or groups.frame["group"].nunique() < 2
            or gray_unavailable(groups.frame)):
        return None
    test = engine.gray_test(groups.frame, by="group", cause=int(cause),
                            strata="strata" if "strata" in groups.frame else None,
                            time="time", event="codes")
    return test.table.loc[int(cause)]


def gray_words(row, cause: int, stratified: bool) -> str:
    if row is None:
        return ""
    return (f"Gray's test for cause {cause}{' (stratified)' if stratified else ''}: "
            f"chi-square = {row['statistic']:.2f} on {int(row['df'])} df, "
            f"p = {p_text(row['p'])}")


# ----------------------------------------------------------------------------------------
# the treatment effect within subgroups (a forest plot with subgroup rows)
def subgroup_ratios(store, by: str, subgroups: list[str]) -> pd.DataFrame:
    """Hazard ratio of the second level of ``by`` against the first, overall and within each
    level of each subgroup column: one engine.fit (Cox, Efron ties) of the rows of that level
    with the arm as the only covariate. Columns: row (label), n, events, hr, hr_lower,
    hr_upper, note (why a row has no estimate), p_interaction (on each subgroup column's
    heading row: ``_interaction_p``)."""
    groups = groups_of(store, by, carry=subgroups)
    levels = sorted(groups.frame["group"].unique())
    if len(levels) != 2:
        raise DescribeError(f"{by!r} has {len(levels)} groups; a hazard ratio by subgroup "
                            "compares two")
    frame = groups.frame.assign(arm=(groups.frame["group"] == levels[1]).astype(int))
    rows = [_arm_ratio(frame, f"All ({groups.shown(levels[1])} vs {groups.shown(levels[0])})")]
    for column in subgroups:
        values, names = group_values(frame[f"carry:{column}"], column)
        rows.append({"row": column, "p_interaction": _interaction_p(frame, values)})
        for level in sorted(values.dropna().unique()):
            rows.append(_arm_ratio(frame[(values == level).to_numpy()],
                                   "   " + names.get(_key(level), str(level))))
    return pd.DataFrame(rows)


def _interaction_p(frame: pd.DataFrame, values: pd.Series) -> float:
    """p of engine.interaction_test of a Cox fit (Efron ties) of ``arm * subgroup`` (the
    subgroup's levels as categories): does the arm's effect differ across the levels? NaN
    when it cannot be fitted."""
    present = values.notna().to_numpy()
    rows = frame[present].assign(subgroup=values[present].map(_key).to_numpy())
    try:
        cohort = engine.Cohort.from_frame(
            rows, time="time", event="event", formula="arm * subgroup",
            start="start" if "start" in rows else None, id="id" if "id" in rows else None,
            weights="weights" if "weights" in rows else None)
        return float(engine.interaction_test(engine.fit(cohort, ties="efron"), "arm",
                                             "subgroup")["p"])
    except Exception:   # one level, no events in a level: the table says no p
        return float("nan")


def _arm_ratio(frame: pd.DataFrame, label: str) -> dict:
    row = {"row": label, "n": len(frame), "events": int(frame["event"].sum())}
    if frame["arm"].nunique() < 2 or row["events"] == 0:
        return {**row, "note": "one arm or no events: no estimate"}
    try:
        cohort = engine.Cohort.from_frame(
            frame, time="time", event="event", covariates=["arm"],
            start="start" if "start" in frame else None, id="id" if "id" in frame else None,
            weights="weights" if "weights" in frame else None)
        res = engine.fit(cohort, ties="efron")
    except Exception as exc:   # e.g. no events in one arm: the estimate diverges
        return {**row, "note": str(exc)}
    s = res.summary.loc["arm"]
    return {**row, "hr": s["hr"], "hr_lower": s["hr_lower"], "hr_upper": s["hr_upper"],
            "note": ""}
