"""Incidence rates by group, and their ratios and differences: the events per person-time
table of a cohort paper (R's poisson.test, Stata's ir, Epi's ci.exp on a Poisson model).

A group's rate is D / T, D its events and T its person-time (stop - start summed; with case
weights both are weighted sums); ``breaks`` split follow-up into bands (a, b], each row's
person-time and event falling in the band they fall in (R's survSplit), for rates by time since
entry.  With the model-based variance (counts: no weights, or whole-
number weights) the limits are exact: the rate's Garwood (1936) limits qgamma(a/2, D) / T and
qgamma(1 - a/2, D + 1) / T, and the ratio of group g to the reference r conditional on
D_g + D_r, a binomial with p = T_g / (T_g + T_r): Clopper-Pearson limits p_L, p_U turned into
ratios p / (1 - p) T_r / T_g, and the binomial test's two-sided p-value, as R's
poisson.test(c(D_g, D_r), c(T_g, T_r)).  The difference takes Wald limits with var(D / T) =
D / T^2 (Rothman, Greenland and Lash, Modern Epidemiology, 2008, ch. 14).

With the robust variance (R's default rule, engine.data.clusters: weights that are not whole
numbers, a ``cluster``, or subjects with several events) the rate is the Poisson model's with
a sandwich variance: the clusters' sums U_gc of w_i (d_i - rate_g t_i) give var(log rate_g) =
sum_c U_gc^2 / D_g^2 and cov(log rate_g, log rate_r) = sum_c U_gc U_rc / (D_g D_r) (clusters
spanning groups correlate them), with Wald limits on the log scale for the rate and the ratio
(and the ratio's z test) and on the rate scale for the difference: statsmodels' Poisson GLM
with an exposure offset and the cluster sandwich without its small-sample factor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_level
from ..data.cohort import Cohort
from ..data.groups import group_rows
from ..data.lexis import band_labels, checked_limits
from .person_time import (band_piece, cell_sums, check_per, cluster_scores, garwood_limits,
                          person_time_rows, present_groups, reference_index)


@dataclass
class IncidenceRates:
    """What ``engine.incidence_rates`` returns.

    rates : DataFrame by group (and interval, with ``breaks``): events, person_time, rate,
        lower, upper (rates per ``per`` units of person-time)
    comparisons : DataFrame, one row per group but the reference (in each interval): group,
        reference, (interval,) rate_ratio, rr_lower, rr_upper, p (of rate ratio 1),
        rate_difference, rd_lower, rd_upper (per ``per``); empty with one group
    variance : "exact" (Poisson counts) or "robust by row|id|cluster"
    per, level : the rates' unit (events per ``per`` person-time units) and the limits' level
    """

    rates: pd.DataFrame
    comparisons: pd.DataFrame
    variance: str
    per: float
    level: float


def incidence_rates(cohort: Cohort, by=None, per: float = 1000.0, reference=None,
                    cause=None, breaks=None, level: float = 0.95, variance: str = "auto",
                    cluster=None) -> IncidenceRates:
    """Events, person-time and incidence rates of ``cohort`` by group, with each group's rate
    ratio and difference against ``reference``.

    Parameters
    ----------
    cohort : engine.Cohort; person-time is stop - start of each row ((start, stop] episodes
        add up per subject), case weights weigh events and person-time alike.
    by : None (one group "all"), a strata column, a covariate, or one label per row (as
        engine.kaplan_meier); groups with no rows are left out.
    per : rates are events per ``per`` units of the time column (1000: per 1,000
        person-years when time is in years; 365.25 * 1000 with days).
    reference : the group the others are compared with (a label of ``rates``); the first
        by default.
    cause : None (any event code > 0) or one cause's code of a competing-risks cohort
        (cause-specific rates: the other causes end person-time without an event).
    breaks : None, or increasing follow-up times that split person-time into bands (<= b1,
        (b1, b2], ..., > bk: R's survSplit), each with its own rates, and the groups compared
        within each band (the piecewise-constant hazards); bands a group never reached (and
        groups of zero weights) are left out.
    level : confidence level of the limits.
    variance : "auto" (R's rule: "robust" for weights that are not whole numbers, a
        ``cluster``, or a subject id with more than one event; else "exact") | "exact" |
        "robust" (clustered by ``cluster``, else the subject id, else each row).
    cluster : None, or one value per cohort row: the robust variance's clusters.
    """
    rows = person_time_rows(cohort, cause, variance, cluster, "incidence_rates")
    check_level(level)
    check_per(per)
    edges = _edges(breaks)
    bands = len(edges) - 1
    codes, labels = present_groups(group_rows(cohort, by))
    ref = reference_index(labels, reference)
    k = len(labels) * bands                     # cells: group g, band b at g * bands + b
    codes = codes * bands
    pieces = [band_piece(rows, lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]
    events, time = cell_sums(codes, rows.w, pieces, k)
    kept = time > 0     # a band no one reached in a group (or zero weights) has no rate
    rate = np.divide(events, time, out=np.full(k, np.nan), where=kept)
    pairs = [(g * bands + b, ref * bands + b) for b in range(bands)
             for g in range(len(labels)) if g != ref and kept[g * bands + b]
             and kept[ref * bands + b]]
    z = stats.norm.ppf(0.5 + level / 2)
    if rows.clusters is None:
        lower, upper = garwood_limits(events, time, level)
        compared = [_exact_comparison(events[c], time[c], events[r], time[r], level, z)
                    for c, r in pairs]
        name = "exact"
    else:
        scores = cluster_scores(rows.clusters, codes, rows.w, rate, pieces, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = (scores.T @ scores).toarray() / np.outer(events, events)   # of log rates
        se = np.where(events > 0, np.sqrt(np.abs(np.diag(cov))), np.nan)
        lower, upper = rate * np.exp(-z * se), rate * np.exp(z * se)
        compared = [_robust_comparison(rate, cov, c, r, z) for c, r in pairs]
        name = f"robust by {rows.what}"
    if cohort.weights is None:
        events = events.round().astype(np.int64)
    intervals = band_labels(edges)
    index = (pd.Index(labels, name="group") if breaks is None else pd.MultiIndex.from_product(
        [labels, intervals], names=["group", "interval"]))
    rates = pd.DataFrame({"events": events, "person_time": time, "rate": rate * per,
                          "lower": lower * per, "upper": upper * per}, index=index)
    columns = ["rate_ratio", "rr_lower", "rr_upper", "p", "rate_difference", "rd_lower",
               "rd_upper"]
    comparisons = pd.DataFrame(compared, columns=columns)
    comparisons[["rate_difference", "rd_lower", "rd_upper"]] *= per
    if breaks is not None:
        comparisons.insert(0, "interval", [intervals[c % bands] for c, _ in pairs])
    comparisons.insert(0, "reference", labels[ref])
    comparisons.insert(0, "group", [labels[c // bands] for c, _ in pairs])
    rates = rates[kept]
    return IncidenceRates(rates=rates, comparisons=comparisons, variance=name, per=float(per),
                          level=level)


def _edges(breaks) -> np.ndarray:
    """-inf, the follow-up times splitting person-time, +inf."""
    if breaks is None:
        return np.array([-np.inf, np.inf])
    cuts = checked_limits(breaks, "follow-up times", "[12, 24]")
    return np.concatenate(([-np.inf], cuts, [np.inf]))


def _exact_comparison(d1, t1, d0, t0, level, z):
    """Rate ratio (exact, conditional on d1 + d0) and difference (Wald) of d1/t1 to d0/t0."""
    difference = d1 / t1 - d0 / t0
    half = z * np.sqrt(d1 / t1 ** 2 + d0 / t0 ** 2)
    n = int(round(d1 + d0))
    if n == 0:
        return [np.nan, np.nan, np.nan, np.nan, difference, difference - half, difference + half]
    test = stats.binomtest(int(round(d1)), n, t1 / (t1 + t0))
    ci = test.proportion_ci(confidence_level=level, method="exact")
    odds = t0 / t1
    with np.errstate(divide="ignore"):
        ratio = [p / (1 - p) * odds if p < 1 else np.inf
                 for p in (test.statistic, ci.low, ci.high)]
    return [*ratio, test.pvalue, difference, difference - half, difference + half]


def _robust_comparison(rate, cov, g, ref, z):
    """Rate ratio (Wald on the log scale, z test) and difference (Wald) with the sandwich
    covariance of the log rates; NaN limits where a group has no events."""
    difference = rate[g] - rate[ref]
    if not (rate[g] > 0 and rate[ref] > 0):
        return [np.nan, np.nan, np.nan, np.nan, difference, np.nan, np.nan]
    log_ratio = np.log(rate[g] / rate[ref])
    se = np.sqrt(max(cov[g, g] + cov[ref, ref] - 2 * cov[g, ref], 0.0))
    p = 2 * stats.norm.sf(abs(log_ratio) / se) if se > 0 else np.nan
    var = (rate[g] ** 2 * cov[g, g] + rate[ref] ** 2 * cov[ref, ref]
           - 2 * rate[g] * rate[ref] * cov[g, ref])
    half = z * np.sqrt(max(var, 0.0))
    return [np.exp(log_ratio), np.exp(log_ratio - z * se), np.exp(log_ratio + z * se), p,
            difference, difference - half, difference + half]
