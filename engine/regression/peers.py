"""Peers the engine is timed against: lifelines' Cox fits and a naive O(N^2) log-likelihood.

Neither is used to fit anything: the app's Timing tab (and benchmarks) time them beside the
engine. lifelines is imported only when a peer fit runs.
"""

from __future__ import annotations

import numpy as np


def naive_loglik(time, event, X, beta) -> float:
    """TEACHING ONLY: the Breslow log partial likelihood by brute force, O(N^2) time and memory.

    l = sum over events i of [eta_i - log sum_{j: t_j >= t_i} exp(eta_j)] (no strata, no entry
    times). Timed beside the engine's scan to show why scans matter.
    """
    eta = np.asarray(X @ beta).ravel()
    at_risk = time[None, :] >= time[:, None]            # N x N risk-set indicator
    denom = at_risk.astype(float) @ np.exp(eta)
    ev = event > 0
    return float(np.sum(eta[ev] - np.log(denom[ev])))


def lifelines_fit(cohort):
    """The cohort fitted by lifelines (CoxPHFitter, or CoxTimeVaryingFitter for start/stop
    rows), Efron ties, unpenalised; returns the fitted lifelines object."""
    from lifelines import CoxPHFitter, CoxTimeVaryingFitter

    df = cohort.to_frame()
    df["event"] = (df["event"] > 0).astype(int)
    strata = ["strata"] if "strata" in df else None
    if cohort.start is not None:
        return CoxTimeVaryingFitter().fit(df.drop(columns=[c for c in ("weights",) if c in df]),
                                          id_col="id", event_col="event", start_col="start",
                                          stop_col="time", strata=strata)
    df = df.drop(columns=[c for c in ("id",) if c in df])
    return CoxPHFitter().fit(df, duration_col="time", event_col="event", strata=strata,
                             weights_col="weights" if "weights" in df else None)
