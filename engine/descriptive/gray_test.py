"""Gray's K-sample test for cumulative incidence curves (Gray 1988, "A class of K-sample tests for
comparing the cumulative incidence of a competing risk", Ann. Stat. 16:1141-1154), as R
cmprsk's cuminc prints it under "Tests:" (one row per cause).

For the cause of interest, at each distinct time t with an event of any cause, group k has
R_k(t) = n_k(t) / S_k(t-) "subdistribution" subjects at risk (n_k at risk, S_k its all-cause
Kaplan-Meier), and the pooled subdistribution hazard is d1(t) / sum_k R_k(t).  The score is

    s_k = sum_t w(t) [d1_k(t) - d1(t) R_k(t) (1 - F_k(t-)) / sum_r R_r(t) (1 - F_r(t-))],

F_k the Aalen-Johansen cumulative incidence of the group, w(t) = (1 - F(t-))^rho with F the
pooled estimate F(t) = F(t-) + d1(t) / sum_r R_r(t).  The variance is Gray's consistent
estimator (the paper's sec. 2 and appendix): the score as a sum of martingale integrals over the
events of the cause and of the competing causes, with the influence of the estimated F carried
by a running matrix C(t) = sum_{u <= t} A(u) d1(u) / (sum_r R_r(u) (1 - F(u-))),
A = w (diag(R) - R R' / sum R); ties enter with the hypergeometric-type corrections cmprsk
uses.  With strata the scores and variances are summed over strata.  The statistic
s' V^-1 s over the first K - 1 groups is chi-square on K - 1 degrees of freedom.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..data import validation as v
from ..core.arguments import renamed
from ..data.cohort import Cohort
from ..core.statistical_result import TestResult
from ..core.errors import CohortError


@renamed(group="by=")
def gray_test(data, by, cause=None, strata=None, rho: float = 0.0, time: str | None = None,
              event: str | None = None) -> TestResult:
    """Gray's test of equal cumulative incidence across the groups of ``by``.

    Parameters
    ----------
    data : pandas.DataFrame (with ``time`` and ``event`` column names; event 0 censored,
        1..m causes) or engine.Cohort (its time and event codes)
    by : a column of ``data`` (a Cohort: a strata column or a covariate) or labels, one a row
    cause : None (every cause present, as cuminc) or one cause code or a list of them
    strata : None, or a column / labels as ``by``: scores and variances summed over strata
    rho : the weight's power, w(t) = (1 - F(t-))^rho (cuminc's rho, default 0)

    Returns
    -------
    engine.TestResult: ``table`` indexed by cause, statistic, df, p (cuminc's stat, df, pv);
    statistic, df, p those of the cause when one is tested, NaN when several are (each its
    own test: read them in ``table``).
    """
    if not (isinstance(rho, (int, float)) and np.isfinite(rho)):
        raise ValueError(f"rho must be a finite number, got {rho!r}")
    t, e, labels = _columns(data, time, event)
    groups = _labels(data, by, "by", labels)
    layers = (np.zeros(len(t), dtype=np.int64) if strata is None
              else pd.factorize(_labels(data, strata, "strata", labels), sort=True)[0])
    codes, names = pd.factorize(groups, sort=True)
    k = len(names)
    if k < 2:
        raise CohortError(f"by={by!r} has a single group; Gray's test needs at least two.")
    present = np.unique(e[e > 0]).tolist()
    causes = present if cause is None else np.atleast_1d(cause).tolist()
    absent = [c for c in causes if c not in present]
    if absent:
        raise CohortError(f"cause {absent} has no events; the event codes present are {present}.")
    rows = []
    for c in causes:
        m = np.where(e == c, 1, np.where(e > 0, 2, 0))
        score, variance = np.zeros(k - 1), np.zeros((k - 1, k - 1))
        for layer in np.unique(layers):
            keep = layers == layer
            s, var = _stratum(t[keep], m[keep], codes[keep], k, float(rho))
            score += s
            variance += var
        statistic = float(score @ np.linalg.lstsq(variance, score, rcond=None)[0])
        rows.append({"cause": c, "statistic": statistic, "df": k - 1,
                     "p": float(stats.chi2.sf(statistic, k - 1))})
    table = pd.DataFrame(rows).set_index("cause")
    one = table.iloc[0] if len(table) == 1 else pd.Series(np.nan, index=table.columns)
    return TestResult(statistic=float(one["statistic"]),
                      df=int(one["df"]) if len(table) == 1 else np.nan, p=float(one["p"]),
                      table=table,
                      spec={"by": by if isinstance(by, str) else "labels", "causes": causes,
                            "strata": strata if strata is None or isinstance(strata, str)
                            else "labels", "rho": rho})


def _columns(data, time, event):
    """Times, integer event codes and row labels of a Cohort or a checked DataFrame."""
    if isinstance(data, Cohort):
        return np.asarray(data.time, float), np.asarray(data.event), None
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be an engine.Cohort or a pandas DataFrame, got "
                        f"{type(data).__name__}")
    if time is None or event is None:
        raise ValueError("a DataFrame needs time= and event= naming its columns")
    v.check_columns_exist(data.columns, [("time", time), ("event", event)])
    labels = data.index.to_numpy()
    t = data[time].to_numpy(float)
    v.check_finite(t, time, "time", labels)
    v.fail_rows(t < 0, t, time, "time", "negative times",
                "Follow-up times are measured from the time origin and must be >= 0.", labels)
    return t, v.check_events(data[event].to_numpy(float), True, event, labels), labels


def _labels(data, by, role, labels):
    """One group label per row: a column of the DataFrame, a Cohort's strata or covariate
    column, or the labels given."""
    if isinstance(by, str):
        if isinstance(data, Cohort):
            if by in data.strata_columns and len(data.strata_columns) == 1:
                return np.asarray(data.strata_labels, dtype=object)[data.strata]
            if by in data.names:
                return data.X[:, data.names.index(by)].toarray().ravel()
            raise CohortError(f"{role}={by!r} is neither the strata column nor a covariate of "
                              f"this cohort; covariates: {data.names[:20]}")
        v.check_columns_exist(data.columns, [(role, by)])
        values = data[by].to_numpy()
    else:
        values = np.asarray(by, dtype=object)
        n = data.n if isinstance(data, Cohort) else len(data)
        if values.shape != (n,):
            raise CohortError(f"{role} labels have shape {values.shape}; pass a column name or "
                              f"one label per row ({n} rows).")
    v.check_no_missing(values, by if isinstance(by, str) else role, role, labels)
    return values


def _stratum(t, m, g, k, rho):
    """Score (k - 1,) and variance (k - 1, k - 1) of one stratum; m: 0 censored, 1 the cause,
    2 a competing cause; g: group codes 0..k-1."""
    times, slot = np.unique(t, return_inverse=True)
    d = np.zeros((3, times.size, k))
    np.add.at(d, (m, slot, g), 1.0)
    at_risk = np.cumsum(d.sum(axis=0)[::-1], axis=0)[::-1]       # n_k(t): rows with T >= t
    d1, d2 = d[1], d[2]
    hit = (d1 + d2).sum(axis=1) > 0                                # times with an event
    d1, d2, n = d1[hit], d2[hit], at_risk[hit]
    live = n > 0
    safe_n = np.where(live, n, 1.0)
    # each group's all-cause Kaplan-Meier S_k and cumulative incidence F_k (after, and before t)
    s_after = np.cumprod(np.where(live, (n - d1 - d2) / safe_n, 1.0), axis=0)
    s_before = np.vstack([np.ones(k), s_after[:-1]])
    f_after = np.cumsum(np.where(live, s_before * d1 / safe_n, 0.0), axis=0)
    f_before = np.vstack([np.zeros(k), f_after[:-1]])
    r = np.where(live, n / np.where(live, s_before, 1.0), 0.0)     # R_k(t)
    r_total = r.sum(axis=1)
    q_total = (r * (1 - f_before)).sum(axis=1)
    n1 = d1.sum(axis=1)
    pooled = np.cumsum(n1 / r_total)                               # F(t)
    pooled_before = np.concatenate(([0.0], pooled[:-1]))
    w = (1 - pooled_before) ** rho
    score = (w[:, None] * (d1 - n1[:, None] * r * (1 - f_before) / q_total[:, None])).sum(axis=0)
    a = w[:, None, None] * (r[:, :, None] * np.eye(k) - r[:, :, None] * r[:, None, :]
                            / r_total[:, None, None])
    c = np.cumsum(a * (n1 / (r_total * (1 - pooled_before)))[:, None, None], axis=0)
    # the cause's events: group k's martingale increments
    with np.errstate(divide="ignore", invalid="ignore"):
        t4 = np.where(s_after > 0, 1 - (1 - pooled[:, None]) / s_after, 1.0)
        t5 = np.where(n1[:, None] > 1, 1 - (n1[:, None] - 1) / (r_total[:, None] * s_before - 1),
                      1.0)
        t3 = np.where(live & (n1[:, None] > 0), t5 * s_before * n1[:, None]
                      / (r_total[:, None] * safe_n), 0.0)
        b = a - t4[:, None, :] * c                                 # (time, i, k)
        variance = np.einsum("tik,tjk,tk->ij", b, b, t3)
        v2 = np.einsum("tik,tk->ik", b, t4 * t3)
        v3 = (t4 ** 2 * t3).sum(axis=0)
        # the competing causes' events
        u4 = np.where(s_after > 0, (1 - pooled[:, None]) / s_after, 0.0)
        u5 = np.where(d2 > 1, 1 - (d2 - 1) / (safe_n - 1), 1.0)
        u3 = np.where((s_after > 0) & (d2 > 0), u5 * s_before ** 2 * d2 / safe_n ** 2, 0.0)
    bc = u4[:, None, :] * c
    variance += np.einsum("tik,tjk,tk->ij", bc, bc, u3)
    v2 -= np.einsum("tik,tk->ik", bc, u4 * u3)
    v3 += (u4 ** 2 * u3).sum(axis=0)
    final = c[-1]
    variance += final @ np.diag(v3) @ final.T + final @ v2.T + v2 @ final.T
    return score[:-1], variance[:-1, :-1]
