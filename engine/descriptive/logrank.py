"""The log-rank test and its weighted and stratified forms, as R survival's survdiff.

At each distinct event time t of a stratum, with n_g(t) at risk ({start < t <= stop}) and d_g(t)
events in group g (n, d their totals),

    O_g = sum_t w(t) d_g,   E_g = sum_t w(t) d n_g / n,
    V_gh = sum_t w(t)^2 d (n - d) / (n - 1) * (n_g / n) (delta_gh - n_h / n),

summed over strata; the statistic is (O - E)' V^-1 (O - E) over all groups but the first (groups
with E = 0 left out), on k - 1 degrees of freedom (R's survdiff.R and survdiff2.c).  The weight
is Fleming and Harrington's w(t) = S(t-)^rho (1 - S(t-))^gamma, S the Kaplan-Meier of the
pooled stratum: rho = gamma = 0 is the log-rank test, rho = 1 the Peto-Peto / Prentice
modification of Gehan-Wilcoxon; R's survdiff has rho only (gamma = 0).  ``weighting="gehan"``
multiplies w(t) by n(t), the pooled number at risk (Gehan 1965, Breslow 1970: the Gehan-Breslow
generalised Wilcoxon test), ``"tarone-ware"`` by sqrt(n(t)) (Tarone & Ware 1977).  The test for trend
(Collett 2015, sec. 2.6.3) is U = s'(O - E) with variance s'Vs on one degree of freedom, s the
groups' scores.  Case weights count in n and d; where they are not whole numbers (inverse-
probability weights), or a ``cluster`` is given, or a subject has several events, V is the
robust one (engine.data.clusters): V = R'R, R the clusters' sums of w_i r_i, r_i the row's
score residual at beta = 0 of the Cox model with the groups as indicators (Breslow ties),

    r_ig = delta_i w(T_i) (1[g_i = g] - n_g / n at T_i)
           - sum_{start_i < t <= T_i} w(t) d(t) / n(t) (1[g_i = g] - n_g(t) / n(t)),

whose weighted sum is O - E: the log-rank test as R's robust score test of
coxph(Surv(...) ~ group, weights =, cluster =, ties = "breslow") prints it (R's survdiff
takes no weights; with weights as counts its test moves with their scale).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import renamed
from ..data.clusters import robust_choice
from ..data.cohort import Cohort
from ..core.statistical_result import TestResult
from ..data.groups import group_rows
from ..data.risk_set import risk_set_sums


@dataclass
class LogrankResult(TestResult):
    """What ``engine.logrank_test`` returns: an engine.TestResult and the trend test.

    statistic, df, p : the chi-square test of equal hazards across groups (R's survdiff)
    table : DataFrame by group: n (rows, or subjects with ids), observed, expected,
        (O-E)^2/E, (O-E)^2/V, as R prints it
    spec : dict, by, strata, rho, gamma, and the cohort's rows dropped for missing values
        (dropped per column, n_dropped)
    variance : DataFrame k x k, V of O - E
    trend_statistic, trend_p : the one-degree-of-freedom test for trend over ``scores``
    scores : Series, group -> score used for the trend test
    """

    variance: pd.DataFrame
    trend_statistic: float
    trend_p: float
    scores: pd.Series


WEIGHTINGS = {None: 0.0, "gehan": 1.0, "tarone-ware": 0.5}   # the power of n(t) in w(t)


@renamed(group="by=")
def logrank_test(cohort: Cohort, by, strata=None, rho: float = 0.0, gamma: float = 0.0,
                 scores=None, weighting: str | None = None, variance: str = "auto",
                 cluster=None) -> LogrankResult:
    """Compare survival across the groups of ``by``, optionally within strata.

    Parameters
    ----------
    cohort : engine.Cohort (weights and (start, stop] entry times honoured; any event code > 0
        counts as an event)
    by : a strata column, a covariate (a text column by its own name) or labels, one a row
    strata : a column / labels as ``by``: the test is summed over its levels; None: the
        cohort's own strata where it has some (R's survdiff with a strata() term), else none
    rho, gamma : Fleming-Harrington weight S(t-)^rho (1 - S(t-))^gamma, both >= 0
    scores : optional numbers, one per group in the table's order, for the trend test
        (default: the group values where numeric, else 1..k)
    weighting : None, "gehan" (w(t) times n(t): Gehan-Breslow) or "tarone-ware" (times
        sqrt(n(t))), n(t) the number at risk in the stratum
    variance : "auto" ("robust" for case weights that are not whole numbers, a ``cluster``, or
        a subject with several events; else "model") | "model" (survdiff's) | "robust"
    cluster : None, or one value per cohort row: the clusters of the robust variance (default
        the subject id, else each row)
    """
    if not isinstance(cohort, Cohort):
        raise TypeError(f"logrank_test needs an engine.Cohort, got {type(cohort).__name__}. "
                        "Build one with engine.Cohort.from_frame.")
    for name, value in (("rho", rho), ("gamma", gamma)):
        if not (isinstance(value, (int, float)) and np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {list(WEIGHTINGS)}, got {weighting!r}")
    clusters, what = robust_choice(cohort, variance, cluster, plain="model")
    robust = clusters is not None
    groups = group_rows(cohort, by)
    if groups.k < 2:
        raise ValueError(f"by={by!r} has a single group; a test needs at least two.")
    if strata is None and cohort.strata is not None:
        strata = np.asarray(cohort.strata)
    layers = group_rows(cohort, strata)
    start = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights)
    died = np.asarray(cohort.event) > 0
    observed, expected = np.zeros(groups.k), np.zeros(groups.k)
    V = np.zeros((groups.k, groups.k))
    residuals = np.zeros((cohort.n, groups.k)) if robust else None
    for layer in range(layers.k):
        rows = layers.codes == layer
        o, e, v, r = _stratum(start[rows], np.asarray(cohort.time)[rows], died[rows], w[rows],
                              groups.codes[rows], groups.k, rho, gamma, WEIGHTINGS[weighting],
                              robust)
        observed += o
        expected += e
        V += v
        if robust:
            residuals[rows] = r
    if robust:
        sums = np.zeros((clusters.max() + 1, groups.k))
        np.add.at(sums, clusters, w[:, None] * residuals)
        V = sums.T @ sums
    statistic, df = _chi_square(observed, expected, V)
    s = groups.scores if scores is None else np.asarray(scores, dtype=float)
    if s.shape != (groups.k,):
        raise ValueError(f"scores must have one number per group ({groups.k}), got {s.shape}")
    trend_var = s @ V @ s
    trend = (s @ (observed - expected)) ** 2 / trend_var if trend_var > 0 else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        table = pd.DataFrame({
            "n": _counts(cohort, groups), "observed": observed, "expected": expected,
            "(O-E)^2/E": (observed - expected) ** 2 / expected,
            "(O-E)^2/V": (observed - expected) ** 2 / np.diag(V)},
            index=pd.Index(groups.labels, name="group"))
    return LogrankResult(
        statistic=float(statistic), df=int(df),
        p=float(stats.chi2.sf(statistic, df)) if df > 0 else np.nan,
        table=table, variance=pd.DataFrame(V, index=groups.labels,
                                           columns=groups.labels),
        trend_statistic=float(trend), trend_p=float(stats.chi2.sf(trend, 1)),
        scores=pd.Series(s, index=groups.labels, name="score"),
        spec={"by": by if isinstance(by, str) else "labels",
              "strata": strata if strata is None or isinstance(strata, str) else "labels",
              "rho": rho, "gamma": gamma, "weighting": weighting,
              "variance": f"robust by {what}" if robust else "model",
              "dropped": dict(cohort.dropped),
              "n_dropped": cohort.n_dropped})


def _stratum(start, stop, died, w, codes, k, rho, gamma, power, robust):
    """O, E (k,) and V (k, k) of one stratum, and its rows' score residuals (n, k) when
    ``robust`` (else None)."""
    times = np.unique(stop[died])
    if times.size == 0:
        return (np.zeros(k), np.zeros(k), np.zeros((k, k)),
                np.zeros((stop.size, k)) if robust else None)
    slot = np.searchsorted(times, stop[died])
    d = np.zeros((times.size, k))
    np.add.at(d, (slot, codes[died]), w[died])
    n = np.column_stack([risk_set_sums(start[codes == g], stop[codes == g], w[codes == g],
                                       times) for g in range(k)])
    d_all, n_all = d.sum(axis=1), n.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        survival = np.cumprod(np.where(n_all > 0, 1.0 - d_all / n_all, 1.0))
        left = np.concatenate(([1.0], survival[:-1]))          # S(t-), pooled stratum
        weight = left ** rho * (1.0 - left) ** gamma * n_all ** power
        share = np.where(n_all[:, None] > 0, n / n_all[:, None], 0.0)
        c = np.where(n_all > 1, weight ** 2 * d_all * (n_all - d_all) / (n_all - 1), 0.0)
        hazard = np.where(n_all > 0, weight * d_all / n_all, 0.0)
    observed = weight @ d
    expected = (weight * d_all) @ share
    variance = np.diag(c @ share) - share.T @ (c[:, None] * share)
    if not robust:
        return observed, expected, variance, None
    # the residuals' compensator: B(t) = sum w d / n, A(t) = sum w d / n share, to each time
    B = np.concatenate(([0.0], np.cumsum(hazard)))
    A = np.vstack((np.zeros(k), np.cumsum(hazard[:, None] * share, axis=0)))
    entered = np.searchsorted(times, start, side="right")
    ended = np.searchsorted(times, stop, side="right")
    own = np.zeros((stop.size, k))
    own[np.arange(stop.size), codes] = 1.0
    residuals = (A[ended] - A[entered]) - own * (B[ended] - B[entered])[:, None]
    dead = np.flatnonzero(died)
    residuals[dead] += weight[slot][:, None] * (own[dead] - share[slot])
    return observed, expected, variance, residuals


def _chi_square(observed, expected, variance):
    """R's survdiff: drop groups with E = 0 and the first remaining one, then solve."""
    keep = np.flatnonzero(expected > 0)
    if keep.size < 2:
        return 0.0, 0
    rest = keep[1:]
    diff = (observed - expected)[rest]
    v = variance[np.ix_(rest, rest)]
    return float(diff @ np.linalg.lstsq(v, diff, rcond=None)[0]), rest.size


def _counts(cohort, groups):
    """Rows per group, or distinct subjects per group when the cohort has ids."""
    if cohort.id is None:
        return np.bincount(groups.codes, minlength=groups.k)
    frame = pd.DataFrame({"id": cohort.id, "group": groups.codes}).drop_duplicates()
    return np.bincount(frame["group"].to_numpy(), minlength=groups.k)
