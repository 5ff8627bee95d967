"""Age- (or any stratum-) standardised rates: direct standardisation (a group's rates in each
stratum averaged with a standard population's weights) and indirect standardisation (the
standardised mortality / incidence ratio, observed over expected events).

Direct: the standardised rate of group g is DSR_g = sum_s W_s D_gs / T_gs, W the standard's
weights (summing to 1), D_gs and T_gs the group's events and person-time in stratum s.  With
counts (no weights, or whole-number weights) var(DSR_g) = sum_s W_s^2 D_gs / T_gs^2 and the
limits are Fay and Feuer's gamma limits (Fay MP, Feuer EJ. Confidence intervals for directly
standardized rates: a method based on the gamma distribution. Stat Med 1997;16:791-801), as R's
epitools::ageadjust.direct: qgamma(a/2, DSR^2 / V, scale = V / DSR) and qgamma(1 - a/2,
(DSR + M)^2 / (V + M^2), scale = (V + M^2) / (DSR + M)), M = max_s W_s / T_gs (the lower is 0
without events).  With the robust variance (R's rule, engine.data.clusters: IPTW weights, a
cluster, recurrent events) the stratum rates' sandwich covariance (incidence_rates) is carried
through the weights, with Wald limits on the log scale.  Two groups' standardised rates are
compared by their ratio (Wald on the log scale: the delta method, Rothman, Greenland and Lash,
Modern Epidemiology, 2008, ch. 4) and their difference (Wald).

Indirect: group g's expected events are E_g = sum_s T_gs lambda_s, lambda the reference rates
(the whole cohort's stratum rates, or given ones: a national population's); SMR_g = D_g / E_g
with exact limits and the two-sided p-value of R's poisson.test(D_g, E_g) (E fixed: the
reference rates are taken as known), or with the robust variance, var(log SMR_g) = sum_c U_c^2
/ D_g^2 over the clusters' scores U_c = sum w (d - SMR_g lambda_s t).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_level
from ..core.errors import DataWarning
from ..data.cohort import Cohort
from ..data.groups import Groups, group_rows
from ..data.lexis import band_labels
from .person_time import (band_piece, cell_sums, check_per, cluster_scores, garwood_limits,
                          person_time_rows, present_groups, reference_index)
from .standard_populations import STANDARD_POPULATIONS, age_group_codes, standard_population


@dataclass
class StandardizedRates:
    """What ``engine.standardized_rates`` returns.

    rates : DataFrame by group: events, person_time, crude_rate, rate (standardised), lower,
        upper (per ``per`` units of person-time); rate NaN where the group has no person-time
        in a stratum the standard weighs (named in a DataWarning)
    comparisons : DataFrame, one row per group but the reference: group, reference,
        rate_ratio, rr_lower, rr_upper, p (of ratio 1), rate_difference, rd_lower, rd_upper
    strata : DataFrame by (group, stratum): events, person_time, rate (the stratum-specific
        rates standardisation averages)
    weights : Series by stratum, the standard's weights (summing to 1)
    standard : what the weights are ("the cohort's person-time", "<group>'s person-time",
        "given", or a standard population's title and the age groups of it the cohort has)
    variance : "exact" (Poisson counts: Fay-Feuer limits) or "robust by row|id|cluster"
    per, level : the rates' unit and the limits' level
    """

    rates: pd.DataFrame
    comparisons: pd.DataFrame
    strata: pd.DataFrame
    weights: pd.Series
    standard: str
    variance: str
    per: float
    level: float


@dataclass
class StandardizedRatios:
    """What ``engine.smr`` returns.

    ratios : DataFrame by group: observed, expected, smr, lower, upper, p (of SMR 1)
    expected_from : "the cohort's rates" or "given rates"
    variance : "exact" (Poisson counts, as R's poisson.test) or "robust by row|id|cluster"
    level : the limits' level
    """

    ratios: pd.DataFrame
    expected_from: str
    variance: str
    level: float


def standardized_rates(cohort: Cohort, standardize_by, by=None, standard="cohort",
                       per: float = 1000.0, reference=None, cause=None, level: float = 0.95,
                       variance: str = "auto", cluster=None) -> StandardizedRates:
    """Directly standardised incidence rates of ``cohort``'s groups, with the ratio and
    difference of each group's to ``reference``'s.

    Parameters
    ----------
    cohort : engine.Cohort; person-time is stop - start of each row ((start, stop] episodes
        split at ages make attained-age bands, as Epi's splitLexis).
    standardize_by : the strata of the standard (age bands, sex by age band): a strata column,
        a covariate, or one label per row (as ``by``).  With a standard population's name:
        ages in years (a numeric covariate, or one per row), placed in its groups [lower,
        upper); or one label per row, its group labels ("40-44") or, for attained ages, the
        bands of engine.split_lexis cut at its limits (``standard_population(name)["lower"]
        [1:]``: the band "(40, 45]" is the group "40-44").
    by : None (one group "all"), a strata column, a covariate, or one label per row.
    standard : "cohort" (each stratum weighed by the whole cohort's person-time in it),
        "reference" (by the reference group's), a standard population's name (one of
        engine.STANDARD_POPULATIONS: "who2000", "segi1960", "esp2013", "us2000"; weighed over
        the age groups the cohort has), or weights by stratum label (a dict or Series,
        restricted to the strata the cohort has).
    per : rates are events per ``per`` units of the time column.
    reference : the group the others are compared with; the first by default.
    cause : None (any event) or one cause's code (cause-specific rates).
    level : confidence level of the limits.
    variance : "auto" (R's rule: "robust" for weights that are not whole numbers, a
        ``cluster``, or a subject with several events; else "exact") | "exact" | "robust".
    cluster : None, or one value per cohort row: the robust variance's clusters.
    """
    rows = person_time_rows(cohort, cause, variance, cluster, "standardized_rates")
    check_level(level)
    check_per(per)
    named = isinstance(standard, str) and standard in STANDARD_POPULATIONS
    table = standard_population(standard) if named else None
    cells = _Cells(cohort, rows, by, _strata(cohort, standardize_by, table))
    labels, names = cells.labels, cells.strata
    ref = reference_index(labels, reference)
    G, S = len(labels), len(names)
    W, what = _standard_weights(standard, cells, ref, table)
    T = cells.time.reshape(G, S)
    rate = np.divide(cells.events, cells.time, out=np.full(G * S, np.nan),
                     where=cells.time > 0)
    weighed = W > 0
    missing = (T[:, weighed] <= 0)
    dsr = np.where(missing.any(axis=1), np.nan,
                   np.nansum(W * np.nan_to_num(rate.reshape(G, S)), axis=1))
    for g in np.flatnonzero(missing.any(axis=1)):
        absent = [names[s] for s in np.flatnonzero(weighed)[missing[g]]]
        warnings.warn(f"group {labels[g]!r} has no person-time in the strata {absent[:5]}, "
                      "which the standard weighs: its standardised rate is not defined (NaN). "
                      "Merge those strata, or standardise over the strata every group has.",
                      DataWarning, stacklevel=2)
    A = np.zeros((G, G * S))        # DSR = A rate (over the cells)
    for g in range(G):
        A[g, g * S:(g + 1) * S] = W
    z = stats.norm.ppf(0.5 + level / 2)
    if rows.clusters is None:
        cell_var = np.divide(cells.events, cells.time ** 2, out=np.zeros(G * S),
                             where=cells.time > 0)
        V = np.diag((A ** 2) @ cell_var)
        lower, upper = _fay_feuer(dsr, np.diag(V), W, T, level)
        name = "exact"
    else:
        scores = cluster_scores(rows.clusters, cells.codes, rows.w, np.nan_to_num(rate),
                                cells.pieces, G * S)
        with np.errstate(divide="ignore", invalid="ignore"):
            C = (scores.T @ scores).toarray() / np.outer(cells.time, cells.time)
        C[~np.isfinite(C)] = 0.0        # cells without person-time weigh nothing
        V = A @ C @ A.T
        se = np.sqrt(np.abs(np.diag(V))) / np.where(dsr > 0, dsr, np.nan)
        lower, upper = dsr * np.exp(-z * se), dsr * np.exp(z * se)
        name = f"robust by {rows.what}"
    D, Tg = cells.events.reshape(G, S).sum(axis=1), T.sum(axis=1)
    if cohort.weights is None:
        D = D.round().astype(np.int64)
    crude = np.divide(D, Tg, out=np.full(G, np.nan), where=Tg > 0)
    rates = pd.DataFrame({"events": D, "person_time": Tg, "crude_rate": crude * per,
                          "rate": dsr * per, "lower": lower * per, "upper": upper * per},
                         index=pd.Index(labels, name="group"))
    compared = [[labels[g], labels[ref], *_comparison(dsr, V, g, ref, z)]
                for g in range(G) if g != ref]
    comparisons = pd.DataFrame(compared, columns=["group", "reference", "rate_ratio",
                                                  "rr_lower", "rr_upper", "p",
                                                  "rate_difference", "rd_lower", "rd_upper"])
    comparisons[["rate_difference", "rd_lower", "rd_upper"]] *= per
    strata = pd.DataFrame({"events": cells.events, "person_time": cells.time,
                           "rate": rate * per},
                          index=pd.MultiIndex.from_product([labels, names],
                                                           names=["group", "stratum"]))
    return StandardizedRates(rates=rates, comparisons=comparisons, strata=strata,
                             weights=pd.Series(W, index=pd.Index(names, name="stratum"),
                                               name="weight"),
                             standard=what, variance=name, per=float(per), level=level)


def smr(cohort: Cohort, standardize_by, by=None, reference_rates=None, per: float = 1000.0,
        cause=None, level: float = 0.95, variance: str = "auto", cluster=None,
        age_groups: str | None = None) -> StandardizedRatios:
    """Standardised mortality (incidence) ratios of ``cohort``'s groups: observed events over
    those expected at the reference rates, stratum by stratum.

    Parameters
    ----------
    cohort, standardize_by, by, cause, level, variance, cluster : as standardized_rates.
    reference_rates : None (the whole cohort's rate in each stratum: an internal comparison)
        or rates by stratum label (a dict or Series, events per ``per`` units of person-time:
        a national population's).
    per : the unit of ``reference_rates``.
    age_groups : None, or a standard population's name: ``standardize_by`` as in
        standardized_rates(standard=<name>), the strata being its age groups; rates given
        for groups the cohort does not have (a national table's) are left aside.
    """
    rows = person_time_rows(cohort, cause, variance, cluster, "smr")
    check_level(level)
    check_per(per)
    table = None if age_groups is None else standard_population(age_groups)
    cells = _Cells(cohort, rows, by, _strata(cohort, standardize_by, table))
    labels, names = cells.labels, cells.strata
    if table is not None and isinstance(reference_rates, (dict, pd.Series)):
        reference_rates = {k: v for k, v in dict(reference_rates).items()
                           if str(k) in names or str(k) not in table.index}
    G, S = len(labels), len(names)
    D, T = cells.events.reshape(G, S), cells.time.reshape(G, S)
    if reference_rates is None:
        pooled = T.sum(axis=0)
        lam = np.divide(D.sum(axis=0), pooled, out=np.zeros(S), where=pooled > 0)
        source = "the cohort's rates"
    else:
        lam = _by_stratum(reference_rates, names, "reference_rates") / per
        source = "given rates"
    observed, expected = D.sum(axis=1), T @ lam
    ratio = np.divide(observed, expected, out=np.full(G, np.nan), where=expected > 0)
    if rows.clusters is None:
        lower, upper = garwood_limits(observed, expected, level)
        p = np.array([_poisson_p(o, e) for o, e in zip(observed, expected)])
        name = "exact"
    else:
        cell_rate = (np.nan_to_num(ratio)[:, None] * lam[None, :]).ravel()
        scores = cluster_scores(rows.clusters, cells.codes, rows.w, cell_rate, cells.pieces,
                                G * S)
        U = scores @ np.kron(np.eye(G), np.ones((S, 1)))       # cells summed per group
        se = np.sqrt(np.sum(U ** 2, axis=0)) / np.where(observed > 0, observed, np.nan)
        z = stats.norm.ppf(0.5 + level / 2)
        lower, upper = ratio * np.exp(-z * se), ratio * np.exp(z * se)
        p = 2 * stats.norm.sf(np.abs(np.log(ratio)) / se)
        name = f"robust by {rows.what}"
    if cohort.weights is None:
        observed = observed.round().astype(np.int64)
    table = pd.DataFrame({"observed": observed, "expected": expected, "smr": ratio,
                          "lower": lower, "upper": upper, "p": p},
                         index=pd.Index(labels, name="group"))
    return StandardizedRatios(ratios=table, expected_from=source, variance=name, level=level)


class _Cells:
    """Events and person-time of each (group, stratum) cell, cell g * S + s; groups and strata
    with no rows are left out."""

    def __init__(self, cohort, rows, by, strata: Groups):
        g_codes, self.labels = present_groups(group_rows(cohort, by))
        s_codes, self.strata = present_groups(strata)
        S = len(self.strata)
        self.codes = g_codes * S + s_codes
        self.pieces = [band_piece(rows, -np.inf, np.inf)]
        self.events, self.time = cell_sums(self.codes, rows.w, self.pieces,
                                           len(self.labels) * S)


def _strata(cohort, standardize_by, table=None) -> Groups:
    """The stratum of each row: data.groups.group_rows of ``standardize_by``, or, with a
    standard population's ``table``, its age group (standard_populations)."""
    if standardize_by is None:
        raise ValueError("standardize_by is required: the strata of the standard (a column "
                         "of age bands, say, or one label per row).")
    if table is None:
        return group_rows(cohort, standardize_by)
    labels = list(table.index)
    if isinstance(standardize_by, str) and standardize_by in cohort.names:
        ages = cohort.X[:, cohort.names.index(standardize_by)].toarray().ravel()
        codes = age_group_codes(ages, table, f"covariate {standardize_by!r}")
    elif not isinstance(standardize_by, str):
        values = np.asarray(standardize_by)
        if values.shape != (cohort.n,):
            raise ValueError(f"standardize_by has shape {values.shape}; pass ages (or age "
                             f"groups) one per row ({cohort.n} rows), or a covariate's name.")
        if values.dtype.kind in "biuf":
            codes = age_group_codes(values, table, "standardize_by")
        else:
            # its group labels, or split_lexis's bands cut at its limits (band k is group k)
            bands = band_labels([-np.inf, *table["lower"].to_numpy()[1:], np.inf])
            position = {**{band: k for k, band in enumerate(bands)},
                        **{label: k for k, label in enumerate(labels)}}
            codes = pd.Series(values.astype(object)).map(position)
            unknown = pd.unique(values[codes.isna().to_numpy()])
            if unknown.size:
                raise ValueError(f"standardize_by holds {unknown[:5].tolist()}, which are not "
                                 f"age groups of the {table.attrs['title']} {labels}; give "
                                 "ages in years (numbers), its group labels, or the bands of "
                                 "engine.split_lexis cut at its limits (breaks = "
                                 "standard_population(name)['lower'][1:]).")
            codes = codes.to_numpy(np.int64)
    else:
        raise ValueError(f"to standardise to the {table.attrs['title']}, standardize_by must "
                         f"be ages in years: a numeric covariate or one age per row, not the "
                         f"strata column {standardize_by!r}.")
    return Groups(np.asarray(codes, np.int64), labels, table["lower"].to_numpy())


def _standard_weights(standard, cells, ref, table=None) -> tuple[np.ndarray, str]:
    """The standard's weights over the strata (summing to 1) and what they are."""
    S = len(cells.strata)
    T = cells.time.reshape(-1, S)
    if table is not None:
        raw = table.loc[cells.strata, "weight"].to_numpy()
        what = f"the {table.attrs['title']}"
        if S < len(table):
            what += (f" (the {S} of its {len(table)} age groups the cohort has, "
                     f"{cells.strata[0]} to {cells.strata[-1]})")
    elif isinstance(standard, str) and standard == "cohort":
        raw, what = T.sum(axis=0), "the cohort's person-time"
    elif isinstance(standard, str) and standard == "reference":
        raw, what = T[ref], f"{cells.labels[ref]}'s person-time"
    elif isinstance(standard, str):
        raise ValueError(f"standard must be 'cohort', 'reference', a standard population "
                         f"{list(STANDARD_POPULATIONS)} or weights by stratum, got {standard!r}")
    else:
        raw, what = _by_stratum(standard, cells.strata, "standard"), "given"
    if not raw.sum() > 0:
        raise ValueError("the standard's weights are all zero; give at least one stratum a "
                         "positive weight.")
    return raw / raw.sum(), what


def _by_stratum(values, strata, argument) -> np.ndarray:
    """``values`` (a dict or Series by stratum label) over ``strata``, in that order: every
    stratum given, no other, each a finite number >= 0."""
    if not isinstance(values, (dict, pd.Series)):
        raise TypeError(f"{argument} must be a dict or Series by stratum label, got "
                        f"{type(values).__name__}")
    given = {str(k): v for k, v in dict(values).items()}
    absent = [s for s in strata if s not in given]
    extra = [k for k in given if k not in strata]
    if absent or extra:
        raise ValueError(f"{argument} must give each stratum of the cohort once, by label "
                         f"{strata[:8]}: missing {absent[:5]}, unknown {extra[:5]}. Restrict it "
                         "to the strata the cohort has (a truncated standard).")
    out = pd.to_numeric(pd.Series([given[s] for s in strata]), errors="coerce").to_numpy(float)
    bad = [s for s, v in zip(strata, out) if not (np.isfinite(v) and v >= 0)]
    if bad:
        raise ValueError(f"{argument} must be finite numbers >= 0; it is not for {bad[:5]}")
    return out


def _fay_feuer(dsr, var, W, T, level) -> tuple[np.ndarray, np.ndarray]:
    """Fay and Feuer's gamma limits of each group's standardised rate; M = max_s W_s / T_gs."""
    a = (1 - level) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        M = np.max(np.where(W > 0, W / T, 0.0), axis=1)
        lower = np.where(dsr > 0, stats.gamma.ppf(a, dsr ** 2 / var, scale=var / dsr), 0.0)
        upper = stats.gamma.ppf(1 - a, (dsr + M) ** 2 / (var + M ** 2),
                                scale=(var + M ** 2) / (dsr + M))
    return np.where(np.isnan(dsr), np.nan, lower), upper


def _comparison(dsr, V, g, ref, z) -> list:
    """Ratio (Wald on the log scale, z test) and difference (Wald) of two standardised
    rates with covariance V."""
    difference = dsr[g] - dsr[ref]
    var = V[g, g] + V[ref, ref] - 2 * V[g, ref]
    half = z * np.sqrt(max(var, 0.0))
    if not (dsr[g] > 0 and dsr[ref] > 0):
        return [np.nan, np.nan, np.nan, np.nan, difference, difference - half,
                difference + half]
    log_ratio = np.log(dsr[g] / dsr[ref])
    se = np.sqrt(max(V[g, g] / dsr[g] ** 2 + V[ref, ref] / dsr[ref] ** 2
                     - 2 * V[g, ref] / (dsr[g] * dsr[ref]), 0.0))
    p = 2 * stats.norm.sf(abs(log_ratio) / se) if se > 0 else np.nan
    return [np.exp(log_ratio), np.exp(log_ratio - z * se), np.exp(log_ratio + z * se), p,
            difference, difference - half, difference + half]


def _poisson_p(x, m) -> float:
    """Two-sided p-value of x events where m are expected, as R's poisson.test: the
    probability of counts no likelier than x (relative tolerance 1e-7)."""
    if not m > 0:
        return np.nan
    x = int(round(x))
    if x == m:
        return 1.0
    d = stats.poisson.pmf(x, m)
    if x < m:
        n = int(np.ceil(2 * m - x))
        while stats.poisson.pmf(n, m) > d:
            n *= 2
        y = int(np.sum(stats.poisson.pmf(np.arange(int(np.ceil(m)), n + 1), m)
                       <= d * (1 + 1e-7)))
        return float(min(1.0, stats.poisson.cdf(x, m) + stats.poisson.sf(n - y, m)))
    y = int(np.sum(stats.poisson.pmf(np.arange(0, int(np.floor(m)) + 1), m) <= d * (1 + 1e-7)))
    return float(min(1.0, stats.poisson.cdf(y - 1, m) + stats.poisson.sf(x - 1, m)))
