"""Kaplan-Meier survival curves with R survfit's summaries: medians, survival at chosen times, RMST.

    S(t) = prod_{t_k <= t} (1 - d_k / n_k),   var(log S(t)) = sum_{t_k <= t} d_k / (n_k (n_k - d_k))

(Greenwood), d_k and n_k weighted sums of events and of rows at risk.  The risk set at t is
{start < t <= stop}, so (start, stop] episodes and delayed entry are honoured, and subjects are
counted, not episodes: a row that ends without an event is a censoring only where the subject
leaves the risk set (its last episode, or before a gap, or before it moves to another group), as
R's survfit(..., id=) counts n.censor (survival:::survflag).  Confidence limits follow R's
survfit_confint ("log", "log-log", "plain"); quantiles and their Brookmeyer-Crowley limits follow
R's quantile.survfit (the time where the curve, or a confidence limit, crosses 1 - p, with the
midpoint rule on a flat exactly at 1 - p); the restricted mean and its SE follow R's survmean
(Miller 1981).  The variance is Greenwood's, or, where R's survfit defaults to it (case weights
that are not whole numbers, such as inverse-probability weights; a ``cluster``; a subject id with
several events), the robust infinitesimal-jackknife variance clustered by subject (km_robust),
which also gives the restricted mean's SE there (R's print(survfit, rmean=) keeps Greenwood's
terms for it, which treat weights as counts).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_level
from ..data.clusters import robust_choice
from ..data.cohort import Cohort
from ..data.groups import group_rows
from ..data.risk_set import risk_set_sums
from .confidence import survfit_limits
from .km_robust import Influence

CONF_TYPES = ("log", "log-log", "plain")
_TOL = np.sqrt(np.finfo(float).eps)     # R's quantile.survfit tolerance


def kaplan_meier(cohort: Cohort, by=None, conf_type: str = "log-log", level: float = 0.95,
                 variance: str = "auto", cluster=None, start_time=None) -> "KaplanMeier":
    """Kaplan-Meier curves of ``cohort`` (all rows, or one curve per group of ``by``).

    Parameters
    ----------
    cohort : engine.Cohort; its weights and (start, stop] entry times are honoured, and any
        event code > 0 counts as an event (all-cause survival).
    by : None, a strata column, a covariate (a one-hot encoded text column by its own name),
        or an array of group labels, one per row (see engine.groups); groups with no rows
        are left out.
    conf_type : "log-log" (default of ``table``, as lifelines and the app draw bands) | "log" |
        "plain"; ``at`` and ``quantile`` take R's default "log" unless told otherwise.
    level : confidence level of the limits.
    variance : "auto" (R's default: "robust" for case weights that are not whole numbers, a
        ``cluster``, or a subject id with more than one event; else "greenwood") |
        "greenwood" | "robust" (infinitesimal jackknife, clustered by ``cluster``, else the
        subject id, else each row).
    cluster : None, or one value per cohort row (e.g. ``df["site"]``): the clusters of the
        robust variance.
    start_time : None, or a time t0: the curves conditional on being event-free at t0 (R's
        survfit(start.time=)): only rows followed to t0 or beyond (stop >= t0) count, so each
        curve is S(t) / S(t0-) from t0 on, 1 before; its restricted mean still starts at 0.
    """
    if not isinstance(cohort, Cohort):
        raise TypeError(f"kaplan_meier needs an engine.Cohort, got {type(cohort).__name__}. "
                        "Build one with engine.Cohort.from_frame.")
    _check_conf(conf_type, level)
    groups = group_rows(cohort, by)
    start = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
    weights = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights)
    clusters, what = robust_choice(cohort, variance, cluster, plain="greenwood")
    variance = "greenwood" if clusters is None else f"robust by {what}"
    leaves = _leaves_risk_set(cohort, groups.codes)
    stop, event = np.asarray(cohort.time), np.asarray(cohort.event) > 0
    followed = _followed_to(stop, start_time)
    curves, influences = {}, {}
    for code, label in enumerate(groups.labels):
        rows = (groups.codes == code) & followed
        if not rows.any():
            continue
        part = start[rows], stop[rows], weights[rows], event[rows]
        curve = _curve(*part, leaves[rows])
        if variance != "greenwood":
            influences[label] = Influence(
                *part, clusters[rows], curve["time"].to_numpy(), curve["at_risk"].to_numpy(),
                curve["events"].to_numpy())
            curve["var_log"] = influences[label].var_log()
        curves[label] = curve
    return KaplanMeier(curves=curves, conf_type=conf_type, level=level,
                       weighted=cohort.weights is not None, dropped=dict(cohort.dropped),
                       n_dropped=cohort.n_dropped, variance=variance,
                       influences=influences,
                       clusters=0 if clusters is None else int(clusters.max()) + 1)


@dataclass
class KaplanMeier:
    """Kaplan-Meier curves by group; ``table`` for plots, the methods for the usual summaries.

    curves : dict, group label -> DataFrame (time, at_risk, events, censored, survival,
        var_log) at each time with an event or a censoring
    dropped, n_dropped : the cohort's rows dropped for missing values, per column and in all
    variance : "greenwood", or "robust by row" | "robust by id" | "robust by cluster" (the
        infinitesimal jackknife and what it treats as independent)
    influences : dict, group label -> km_robust.Influence of a robust curve (its RMST's SE)
    clusters : the number of clusters of a robust variance (0 for Greenwood's)
    """

    curves: dict
    conf_type: str
    level: float
    weighted: bool
    dropped: dict
    n_dropped: int
    variance: str = "greenwood"
    influences: dict = field(default_factory=dict, repr=False)
    clusters: int = 0

    @property
    def table(self) -> pd.DataFrame:
        """time, group, at_risk, events, censored, survival, std_err (of S), lower, upper:
        one row per group and time with an event or a censoring (no row at time 0)."""
        frames = []
        for label, curve in self.curves.items():
            lower, upper = survfit_limits(curve["survival"].to_numpy(),
                                          curve["var_log"].to_numpy(), self.conf_type,
                                          self.level)
            frames.append(pd.DataFrame({
                "time": curve["time"], "group": label, "at_risk": curve["at_risk"],
                "events": curve["events"], "censored": curve["censored"],
                "survival": curve["survival"],
                "std_err": curve["survival"] * np.sqrt(curve["var_log"]),
                "lower": lower, "upper": upper}))
        return self._counts(pd.concat(frames, ignore_index=True))

    @property
    def median(self) -> pd.DataFrame:
        """median, lower, upper by group: R's print(survfit) with conf.type="log"."""
        q = self.quantile([0.5], conf_type="log")
        return q.set_index("group")[["median", "lower", "upper"]]

    def quantile(self, probs=(0.25, 0.5, 0.75), conf_type: str = "log") -> pd.DataFrame:
        """Survival-time quantiles (the time by which a fraction ``p`` has had the event) with
        Brookmeyer-Crowley limits, as R's quantile(survfit, probs); NaN where not reached.

        Columns group, p, time, lower, upper (``time`` is named ``median`` for probs=[0.5]).
        """
        probs = np.atleast_1d(_numbers(probs, "probs"))
        if probs.size == 0 or np.any(~np.isfinite(probs)) or np.any((probs < 0) | (probs > 1)):
            raise ValueError(f"probs must be numbers in [0, 1], got {probs.tolist()}")
        _check_conf(conf_type, self.level)
        rows = []
        for label, curve in self.curves.items():
            x = np.concatenate(([0.0], curve["time"].to_numpy()))
            s = curve["survival"].to_numpy()
            lower, upper = survfit_limits(s, curve["var_log"].to_numpy(), conf_type, self.level)
            for p in probs:
                rows.append({"group": label, "p": p,
                             "time": _findq(x, np.concatenate(([0.0], 1 - s)), p),
                             "lower": _findq(x, np.concatenate(([0.0], 1 - lower)), p),
                             "upper": _findq(x, np.concatenate(([0.0], 1 - upper)), p)})
        out = pd.DataFrame(rows)
        return out.rename(columns={"time": "median"}) if list(probs) == [0.5] else out

    def at(self, times, conf_type: str = "log", extend: bool = False) -> pd.DataFrame:
        """Survival at chosen times with limits, as R's summary(survfit, times=).

        Columns group, time, at_risk (as R: the risk set at the first event or censoring time
        at or after it), events and censored (since the previous chosen time), survival,
        std_err, lower, upper.  Times after a group's last follow-up
        are dropped unless ``extend`` (then at_risk is 0 and the curve is carried forward).
        """
        times = np.sort(np.atleast_1d(_numbers(times, "times")))
        if times.size == 0 or np.any(~np.isfinite(times)) or np.any(times < 0):
            raise ValueError(f"times must be finite numbers >= 0, got {times.tolist()}")
        _check_conf(conf_type, self.level)
        frames = []
        for label, curve in self.curves.items():
            t = curve["time"].to_numpy()
            chosen = times if extend else times[times <= t[-1]]
            last = np.searchsorted(t, chosen, side="right") - 1   # last row at or before
            s = np.where(last >= 0, curve["survival"].to_numpy()[np.maximum(last, 0)], 1.0)
            var = np.where(last >= 0, curve["var_log"].to_numpy()[np.maximum(last, 0)], 0.0)
            lower, upper = survfit_limits(s, var, conf_type, self.level)
            with np.errstate(invalid="ignore"):   # S = 0: 0 x inf is NaN, as R prints it
                std_err = s * np.sqrt(var)
            bounds = np.searchsorted(t, chosen, side="right")
            following = np.searchsorted(t, chosen, side="left")
            at_risk = np.append(curve["at_risk"].to_numpy(float), 0.0)[following]
            before = np.concatenate(([0], bounds[:-1]))
            events = np.concatenate(([0.0], np.cumsum(curve["events"].to_numpy(float))))
            censored = np.concatenate(([0.0], np.cumsum(curve["censored"].to_numpy(float))))
            frames.append(pd.DataFrame({
                "group": label, "time": chosen, "at_risk": at_risk,
                "events": events[bounds] - events[before],
                "censored": censored[bounds] - censored[before],
                "survival": s, "std_err": std_err, "lower": lower, "upper": upper}))
        return self._counts(pd.concat(frames, ignore_index=True))

    def rmst(self, tau: float) -> pd.DataFrame:
        """Restricted mean survival time up to ``tau`` (area under S on [0, tau]) with its SE
        and normal limits at ``level``, by group, as R's print(survfit, rmean=tau); a robust
        curve's SE is the infinitesimal jackknife's (R keeps the Greenwood terms there)."""
        areas, _ = self._rmst_parts(tau)
        z = stats.norm.ppf(1 - (1 - self.level) / 2)
        rows = [{"group": label, "tau": float(tau), "rmst": area, "se": np.sqrt(var),
                 "lower": area - z * np.sqrt(var), "upper": area + z * np.sqrt(var)}
                for label, (area, var) in areas.items()]
        return pd.DataFrame(rows).set_index("group")

    def rmst_difference(self, tau: float, reference=None) -> pd.DataFrame:
        """Each group's restricted mean up to ``tau`` against the ``reference`` group's (default
        the first), as survRM2's rmst2: the difference with its SE, normal limits and
        two-sided p, and the ratio with limits on the log scale.  The groups' covariance is
        counted where clusters (a subject's episodes in two groups) span them.

        Columns group, reference, tau, difference, se, lower, upper, p, ratio, ratio_lower,
        ratio_upper; one row per group but the reference.
        """
        areas, influence = self._rmst_parts(tau)
        labels = list(areas)
        reference = labels[0] if reference is None else reference
        if reference not in areas:
            raise ValueError(f"reference must be one of the groups {labels}, got {reference!r}")
        z = stats.norm.ppf(1 - (1 - self.level) / 2)
        a0, v0 = areas[reference]
        rows = []
        for label in labels:
            if label == reference:
                continue
            a1, v1 = areas[label]
            cov = 0.0
            if label in influence and reference in influence:
                cov = float(influence[label] @ influence[reference])
            se = np.sqrt(max(v1 + v0 - 2 * cov, 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                log_se = np.sqrt(max(v1 / a1 ** 2 + v0 / a0 ** 2 - 2 * cov / (a1 * a0), 0.0))
            diff = a1 - a0
            rows.append({"group": label, "reference": reference, "tau": float(tau),
                         "difference": diff, "se": se, "lower": diff - z * se,
                         "upper": diff + z * se,
                         "p": 2 * stats.norm.sf(abs(diff) / se) if se > 0 else np.nan,
                         "ratio": a1 / a0, "ratio_lower": a1 / a0 * np.exp(-z * log_se),
                         "ratio_upper": a1 / a0 * np.exp(z * log_se)})
        return pd.DataFrame(rows)

    def _rmst_parts(self, tau):
        """({group: (rmst, variance)}, {group: clusters' influences} of robust curves)."""
        if not (isinstance(tau, numbers.Real) and np.isfinite(tau) and tau > 0):
            raise ValueError(f"tau must be a positive number, got {tau!r}")
        areas, influence = {}, {}
        for label, curve in self.curves.items():
            keep = curve["time"].to_numpy() <= tau
            t = np.concatenate((curve["time"].to_numpy()[keep], [tau]))
            s = curve["survival"].to_numpy()[keep]
            d = curve["events"].to_numpy(float)[keep]
            n = curve["at_risk"].to_numpy(float)[keep]
            with np.errstate(divide="ignore", invalid="ignore"):
                h = np.where(n - d > 0, d / (n * (n - d)), 0.0)
            rectangles = np.diff(np.concatenate(([0.0], t))) * np.concatenate(([1.0], s))
            if label in self.influences:
                below = np.zeros(len(curve))
                below[:keep.sum()] = rectangles[1:]
                influence[label] = self.influences[label].rmst_influence(below, self.clusters)
                var = float(influence[label] @ influence[label])
            else:
                after = np.cumsum(rectangles[::-1])[::-1][1:]     # area from each time to tau
                var = float(np.sum(after ** 2 * h))
            areas[label] = (rectangles.sum(), var)
        return areas, influence

    def _counts(self, frame):
        """Whole-number counts as integers when there are no case weights."""
        if not self.weighted:
            for column in ("at_risk", "events", "censored"):
                frame[column] = frame[column].round().astype(np.int64)
        return frame


def _numbers(values, name):
    """values as a float array, or a ValueError naming the argument."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, got {values!r}") from None


def _followed_to(stop, start_time) -> np.ndarray:
    """The rows a curve conditional on ``start_time`` counts: stop >= start_time (R's
    survfitKM keeps them; a subject's later episodes end later still)."""
    if start_time is None:
        return np.ones(stop.size, dtype=bool)
    if not (isinstance(start_time, numbers.Real) and not isinstance(start_time, bool)
            and np.isfinite(start_time)):
        raise ValueError(f"start_time must be a number (a time), got {start_time!r}")
    followed = stop >= start_time
    if not followed.any():
        raise ValueError(f"no row is followed to start_time={start_time:g} (the last time is "
                         f"{stop.max():g}); choose an earlier time.")
    return followed


def _check_conf(conf_type, level):
    if conf_type not in CONF_TYPES:
        raise ValueError(f"conf_type must be one of {CONF_TYPES}, got {conf_type!r}")
    check_level(level)


def _leaves_risk_set(cohort, group_codes):
    """True where a row's end takes its subject out of the group's risk set (R's survflag):
    without entry times every row; with them a subject's last episode, or one followed by a
    gap, or by an episode in another group."""
    if cohort.start is None or cohort.id is None:
        return np.ones(cohort.n, dtype=bool)
    ids = pd.factorize(cohort.id)[0]
    order = np.lexsort((cohort.time, ids, group_codes))
    ids, group_codes = ids[order], group_codes[order]
    same = (ids[1:] == ids[:-1]) & (group_codes[1:] == group_codes[:-1])
    contiguous = same & (cohort.time[order][:-1] >= cohort.start[order][1:])
    out = np.ones(cohort.n, dtype=bool)
    out[order[:-1]] = ~contiguous
    return out


def _curve(start, stop, w, event, leaves):
    """One group's curve at each distinct time with an event or a censoring."""
    times = np.unique(stop[event | leaves])
    died = np.bincount(np.searchsorted(times, stop[event]), w[event], len(times))
    out = ~event & leaves
    censored = np.bincount(np.searchsorted(times, stop[out]), w[out], len(times))
    at_risk = risk_set_sums(start, stop, w, times)
    # differences of running sums of fractional weights carry rounding: snap n = d exactly
    at_risk = np.where(np.abs(at_risk - died) <= 1e-12 * w.sum(), died, at_risk)
    with np.errstate(divide="ignore", invalid="ignore"):
        survival = np.cumprod(np.where(died > 0, 1.0 - died / at_risk, 1.0))
        term = np.where(died > 0, died / (at_risk * (at_risk - died)), 0.0)
    var_log = np.cumsum(term)       # +inf once the curve reaches zero (R: NaN std.err)
    return pd.DataFrame({"time": times, "at_risk": at_risk, "events": died,
                         "censored": censored, "survival": survival, "var_log": var_log})


def _findq(x, y, p):
    """R's findq: where the step function 1 - S (y, non-decreasing at times x, x[0] = 0)
    reaches p; the midpoint of a flat that sits at p within tolerance; NaN if never."""
    if not np.any(np.isfinite(y)) or np.nanmax(y) < p:
        return np.nan
    xmax = x[-1]
    first = ~pd.Series(y).duplicated().to_numpy()
    x, y = x[first], y[first]
    valid = np.flatnonzero(np.isfinite(y))

    def index(shifted):
        order = valid[np.argsort(shifted[valid], kind="stable")]
        grid = shifted[order]
        if p < grid[0] or p > grid[-1]:
            return -1
        return order[np.searchsorted(grid, p, side="left")]

    i1, i2 = index(y + _TOL), index(y - _TOL)
    x1 = x[i1] if i1 >= 0 else np.nan
    quantile = (x1 + x[i2]) / 2 if i2 >= 0 else np.nan
    if p == 0:
        quantile = x[0]
    if np.isfinite(y[-1]) and abs(p - y[-1]) < _TOL:
        quantile = (x1 + xmax) / 2
    return quantile
