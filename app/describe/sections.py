"""What each section of the Describe tab shows, computed from the page's choices alone (no
widget is read or written), so that a worker thread can compute it while the server answers
its other users: Table 1, the survival curves with their test, caption and tables, and the
hazard ratios by subgroup.  At 10^6 rows each took 0.6-3 s in a widget's callback (the
Kaplan-Meier estimate, the log-rank test, the figure's SVG, a Cox fit a subgroup level), the
server's one event loop held meanwhile for every session.

Each function returns what the page shows, or {"error": text} for a choice the data cannot
answer (said on the page, the page kept).  The numbers are describing.py's (engine calls).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..shell.figures import cif_figure, forest_figure, km_figure, risk_times, svg_markup
from . import describing as d


@dataclass(frozen=True)
class SurvivalChoice:
    """The survival section's choices; ``key`` names the data they are of (the curves are
    reused while it and by, strata, cause and conf_type stay)."""

    key: str
    by: str | None
    strata: str | None
    weights: str
    p: float
    q: float
    competing: bool
    cause: int | None
    options: tuple
    conf_type: str
    start_time: float | None = None     # conditional on being event-free then

    @property
    def curves_key(self) -> tuple:
        return (self.key, self.by, self.strata, self.competing, self.cause, self.conf_type,
                self.start_time)


@dataclass
class Curves:
    """The Kaplan-Meier estimate of a survival section, or the cumulative incidence of a cause
    (the tables at chosen times and the restricted mean are read from it on the page)."""

    key: tuple
    groups: d.Groups
    km: object = None          # engine KaplanMeier; None under competing risks
    incidence: pd.DataFrame | None = None   # engine.cumulative_incidence's, under them


def table_one(store, by: str | None, columns: list, nonnormal: list,
              weights: str | None = None) -> dict:
    """Table 1 as shown (text cells) with its note; weighted by the column ``weights``."""
    try:
        t1, left_out = d.baseline_table(store, by, columns, nonnormal, weights)
    except Exception as exc:  # a choice the data cannot answer: said on the page
        return {"error": f"Table 1 is not available: {exc}"}
    message = (
        "n (%) for categorical rows, mean (SD) or median [Q1, Q3] for numbers; SMD = "
        "standardised mean difference; Missing = rows without a value."
        + (" One row per subject: each subject's first (start, stop] episode, the values at "
           "entry." if store.start and store.id else "")
        + (f" {left_out} row(s) without a group value are left out." if left_out else "")
        + (f" Weighted by {weights}: n is the sum of the weights, counts, means, SDs, "
           "quartiles and SMDs weighted (R tableone's svyCreateTableOne); Missing counts rows."
           if weights else ""))
    return {"table": d.table_display(t1, by), "message": message}


def survival(store, choice: SurvivalChoice, curves: Curves | None = None) -> dict:
    """The curves' figure and SVG, the test in words, the caption and the tables of the
    survival section (Kaplan-Meier and the log-rank family, or the cumulative incidence and
    Gray's test under competing risks); ``curves``: an earlier estimate, reused when it is of
    the same choices."""
    try:
        if curves is None or curves.key != choice.curves_key:
            groups = d.groups_of(store, choice.by, choice.strata)
            curves = (Curves(choice.curves_key, groups, incidence=d.incidence_by(
                              d.followed_to(groups, choice.start_time), choice.cause))
                      if choice.competing else
                      Curves(choice.curves_key, groups,
                             d.survival_by(groups, choice.conf_type, choice.start_time)))
        groups = curves.groups
        note = ""
        if groups.dropped:
            note = " Left out for missing values: " + ", ".join(
                f"{n} row(s) without {c}" for c, n in groups.dropped.items()) + "."
        out = (_incidence(store, choice, curves) if choice.competing
               else _kaplan_meier(store, choice, curves))
    except Exception as exc:  # a choice the data cannot answer: said on the page
        return {"error": f"Not available: {exc}"}
    return {**out, "curves": curves, "message": note.strip()}


def _kaplan_meier(store, choice: SurvivalChoice, curves: Curves) -> dict:
    groups, km = curves.groups, curves.km
    rho, gamma, weighting = d.weights_of(choice.weights, choice.p or 0.0, choice.q or 0.0)
    test = d.logrank(d.followed_to(groups, choice.start_time), rho, gamma, weighting)
    words = d.logrank_words(test, d.logrank_name(choice.weights, rho, gamma),
                            choice.strata is not None, choice.start_time)
    trend = d.trend_words(test)
    table_ = km.table.assign(group=km.table["group"].map(groups.shown))
    lo, hi = choice.start_time or 0.0, float(table_["time"].max())   # a landmark's axis
    options = set(choice.options)
    risk = None
    if {"Risk table", "KMunicate table"} & options:
        risk = d.risk_counts(km, groups, risk_times(lo, hi),
                             so_far="KMunicate table" in options)
    medians = km.median["median"].rename(index=groups.shown)
    fig = km_figure(
        table_, risk, medians if "Median lines" in options else None, time_label=store.time,
        note=words, ci="CI bands" in options, censor_marks="Censor marks" in options,
        kmunicate="KMunicate table" in options, window=(lo, max(hi, lo)),
        title=f"Kaplan-Meier{' by ' + groups.column if groups.column else ''}")
    med = d.median_table(km, groups)
    tests = pd.DataFrame() if test is None else test.table.rename(
        index=groups.shown).reset_index()
    return {"test_text": "  \n".join(f"**{w}**" if k == 0 else w
                                     for k, w in enumerate([words, trend]) if w),
            "figure": fig, "svg": svg_markup(fig),
            "caption": d.km_caption(options, choice.conf_type, km.variance, choice.start_time),
            "frames": {"medians": med, "logrank": tests},
            "medians": d.median_display(med)}


def _incidence(store, choice: SurvivalChoice, curves: Curves) -> dict:
    cause, groups, frame = choice.cause, curves.groups, curves.incidence
    row = d.gray(d.followed_to(groups, choice.start_time), cause)
    words = d.gray_words(row, cause, choice.strata is not None) or (
        d.gray_unavailable(groups.frame) if "group" in groups.frame else "")
    fig = cif_figure(frame, cause=cause, time_label=store.time, note=words)
    return {"test_text": f"**{words}**" if words else "", "figure": fig,
            "svg": svg_markup(fig),
            "caption": (f"Cumulative incidence of cause {cause} (Aalen-Johansen)"
                        + ("" if choice.start_time is None else
                           f", conditional on being event-free at {choice.start_time:g}")
                        + ", shaded: pointwise 95% CI (log; R survfit's infinitesimal-jackknife "
                        "variance); the other causes compete."),
            "frames": {"cumulative_incidence": frame,
                       "gray_test": pd.DataFrame() if row is None else row.to_frame().T}}


def survival_tables(curves: Curves | None, times_text: str, tau) -> dict:
    """Survival (or a cause's cumulative incidence) at the chosen times and the restricted
    mean to tau, read from the curves (a few milliseconds at 10^6 rows: the page computes
    them at once)."""
    if curves is None:
        return {"survival_at": pd.DataFrame(), "rmst": pd.DataFrame()}
    km, groups = curves.km, curves.groups
    try:
        times = d.parse_times(times_text)
        if not times:
            at = pd.DataFrame()
        elif km is None:
            at = d.incidence_at(curves.incidence, times)
        else:
            at = d.survival_at(km, groups, times)
    except d.DescribeError as exc:
        at = pd.DataFrame({"problem": [str(exc)]})
    if km is None:
        return {"survival_at": at, "rmst": pd.DataFrame()}
    try:
        rmst = d.rmst_table(km, groups, float(tau)) if tau and tau > 0 else pd.DataFrame()
    except Exception as exc:  # a tau the curves cannot answer: said in the table
        rmst = pd.DataFrame({"problem": [str(exc)]})
    return {"survival_at": at, "rmst": rmst}


def rates(curves: Curves, cause: int | None, per, breaks_text: str, time_label: str,
          standard=None) -> dict:
    """The incidence rates of the curves' groups (of any event, or of ``cause``) per ``per``
    units of person-time, in the follow-up bands of ``breaks_text`` when given, with the
    rate ratios and differences and a caption; standardised by ``standard`` = (column, its
    values, bands text, time units per unit of the column when it grows with follow-up, else
    None, the standard: "cohort" or a standard population's name, the SMR's reference rates
    as typed) when given (standardized_tables' tables, or {"std_error": text});
    {"error": text} for a choice they cannot answer."""
    try:
        if not (isinstance(per, (int, float)) and per > 0):
            raise d.DescribeError("type a positive number of person-time units (e.g. 1000)")
        breaks = d.parse_times(breaks_text) or None
        result = d.rates_by(curves.groups, cause, float(per), breaks)
        out = d.rates_tables(result, curves.groups, time_label)
    except Exception as exc:  # a choice the data cannot answer: said on the page
        return {"error": f"Rates not available: {exc}"}
    if standard is not None:
        out.update(_standardized(curves, cause, float(per), time_label, *standard))
    return out


def _standardized(curves, cause, per, time_label, column, values, bands_text,
                  unit=None, standard="cohort", rates_text="") -> dict:
    try:
        # a standard population brings its own age groups: the typed bands are not read
        bands = [] if standard != "cohort" else d.parse_bands(bands_text)
        kept, strata, left_out = d.standard_rows(curves.groups, values, column, bands, cause,
                                                 unit, standard)
        rates, ratios = d.standardized_by(kept, strata, per, standard,
                                          d.parse_rates(rates_text))
        return d.standardized_tables(rates, ratios, curves.groups, column, left_out,
                                     time_label, unit)
    except Exception as exc:  # a choice the data cannot answer: said on the page
        return {"std_error": f"Standardised rates not available: {exc}"}


def subgroups(store, by: str, columns: list) -> dict:
    """The arm's hazard ratio overall and within each subgroup level, with the interaction
    p-values, as a table and a forest plot."""
    try:
        ratios = d.subgroup_ratios(store, by, columns)
    except Exception as exc:  # a choice the data cannot answer: said on the page
        return {"error": f"Not available: {exc}"}
    headed = ratios.assign(row=[r if pd.isna(p) else f"{r} (interaction p = {p:.3g})"
                                for r, p in zip(ratios["row"], ratios["p_interaction"])])
    fig = forest_figure(headed.set_index("row").rename_axis("covariate"),
                        title=f"Hazard ratio by subgroup ({by})", headings=True)
    return {"ratios": ratios, "figure": fig, "svg": svg_markup(fig)}
