"""Predicted cumulative incidence of a Fine-Gray fit, as cmprsk's ``predict.crr``:

    F(t; z) = 1 - exp(-exp(z beta) Lambda0(t)),   Lambda0(t) = sum_{t_k <= t} W_k / den_k,

Lambda0 the Breslow-type baseline subdistribution hazard at x = 0 (cmprsk does not centre) that
crr reports as ``bfitj``: W_k the summed case weight of the cause's events at t_k and den_k the
fit's risk-set sum at t_k, the rows still under observation plus those with a competing event
before t_k weighted G(t_k-)/G(y_r-) (Fine & Gray 1999; engine.backends.fine_gray_kernels).  The
sums reuse the fit's sorted rows; G is the censoring Kaplan-Meier the fit used
(engine.censoring).  Like predict.crr it gives no standard errors.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..data.censoring import left_limits
from ..core.errors import DataWarning
from .predict import checked_times
from .row_flags import GROUP_END


def subdistribution_hazard(res, beta=None, weights=None) -> tuple[list, list, np.ndarray]:
    """(event times, hazard jumps) per stratum of the Fine-Gray fit ``res`` at x = 0, and each
    stratum's last follow-up time; at other coefficients ``beta`` and case weights ``weights``
    (caller's row order) for a bootstrap replicate."""
    check_fine_gray(res)
    cohort = res.problem.cohort
    md = res.problem.model.data
    cause = res.spec["cause"]
    beta = np.nan_to_num(res.coef.to_numpy(float) if beta is None else beta, nan=0.0)
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    w = w if weights is None else np.asarray(weights, float)
    code = np.asarray(cohort.event)
    group = (np.asarray(cohort.strata, np.int64) if res.spec.get("censoring_strata")
             and cohort.strata is not None else np.zeros(cohort.n, np.int64))
    G_left = left_limits(np.asarray(cohort.time, float), code == 0, w, group)[md.order]
    ws = w[md.order]
    D = ws * np.exp(np.asarray(cohort.X @ beta).ravel()[md.order])
    competing = ((code > 0) & (code != cause))[md.order]
    omega_D = np.where(competing & (G_left > 0), D / np.where(G_left > 0, G_left, 1.0), 0.0)
    event = (code == cause)[md.order] & (ws > 0)
    times, jumps = [], []
    last = np.empty(md.strata_bounds.size - 1)
    for s in range(last.size):
        a, b = md.strata_bounds[s], md.strata_bounds[s + 1]
        last[s] = md.stop[a]
        ends = np.flatnonzero((md.flags[a:b] & GROUP_END) > 0)
        starts = np.concatenate(([0], ends[:-1] + 1))
        R1 = np.cumsum(D[a:b])[ends]
        after = np.cumsum(omega_D[a:b][::-1])[::-1]            # suffix sums from each row
        R2 = np.append(after, 0.0)[ends + 1]                     # over the rows after the group
        W = np.add.reduceat(np.where(event[a:b], ws[a:b], 0.0), starts)
        with_events = np.flatnonzero(W > 0)[::-1]
        den = R1 + G_left[a:b][ends] * R2
        times.append(md.stop[a:b][ends][with_events])
        jumps.append(W[with_events] / den[with_events])
    return times, jumps, last


def check_fine_gray(res) -> None:
    """Raise unless ``res`` is a finite Fine-Gray fit that keeps its data."""
    if res.spec.get("model") != "fine_gray":
        raise ValueError(f"predicted cumulative incidence is for Fine-Gray fits; this fit is "
                         f"model={res.spec.get('model')!r} (use predict_survival for Cox).")
    if res.problem is None:
        raise ValueError("this FitResult keeps no data (problem=None): refit with engine.fit.")
    if np.isinf(res.coef.to_numpy(float)).any():
        raise ValueError(f"coefficients {list(res.coef.index[np.isinf(res.coef)])} diverge "
                         "(+/-inf): predictions need a finite fit.")


def predict_cif(res, newdata, times=None) -> pd.DataFrame:
    """Predicted cumulative incidence of the fit's cause for each row of ``newdata`` at
    ``times`` (default: the cause's event times of the row's stratum), as cmprsk's predict.crr.
    A time after the stratum's last follow-up gives NaN with a DataWarning.  Returns a long
    table in newdata's row order: row, stratum (stratified fits), time, cif."""
    event_times, jumps, last = subdistribution_hazard(res)
    asked = None if times is None else checked_times(times)
    cohort = res.problem.cohort
    Z, strata = cohort.encode(newdata)
    strata = np.zeros(Z.shape[0], np.int64) if strata is None else strata
    beta = np.nan_to_num(res.coef.to_numpy(float), nan=0.0)
    risk = np.exp(np.asarray(Z @ beta).ravel())
    parts = []
    for i in range(Z.shape[0]):
        s = strata[i]
        t = event_times[s] if asked is None else asked
        cum = np.concatenate(([0.0], np.cumsum(jumps[s])))
        L = cum[np.searchsorted(event_times[s], t, side="right")]
        cif = 1.0 - np.exp(-risk[i] * L)
        cif[t > last[s]] = np.nan
        part = pd.DataFrame({"row": newdata.index[i], "time": t, "cif": cif})
        if cohort.strata_labels is not None:
            part.insert(1, "stratum", cohort.strata_labels[s])
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    if out["cif"].isna().any():
        warnings.warn(f"{int(out['cif'].isna().sum())} predicted value(s) at times after the "
                      f"last follow-up of their stratum ({last.max():g}) are NaN: the baseline "
                      "is not estimated there.", DataWarning, stacklevel=2)
    return out
