"""The time-dependent Brier score with inverse-probability-of-censoring weights and its
integral (Graf, Schmoor, Sauerbrei & Schumacher, "Assessment and comparison of prognostic
classification schemes for survival data", Statistics in Medicine 1999), as scikit-survival's
brier_score and integrated_brier_score:

    BS(t) = 1/n sum_i [ S_i(t)^2 1{t_i <= t, event} / G(t_i) + (1 - S_i(t))^2 1{t_i > t} / G(t) ],

S_i(t) the predicted survival; the integrated score is the trapezoid rule over the times,
divided by their range.
"""
from __future__ import annotations

import numpy as np

from .ipcw import kaplan_meier_steps
from .survival_data import checked, checked_times, train_or_test


def brier_score(time, event, survival, times, train=None) -> np.ndarray:
    """BS(t) at each of ``times`` of the predicted survival ``survival`` (n, T): row i's
    predicted probability of being event-free at times[k]."""
    time, event = checked(time, event)
    times = checked_times(times, time)
    survival = np.asarray(survival, float)
    if survival.ndim == 1 and times.size == 1:
        survival = survival[:, None]
    if survival.shape != (time.size, times.size) or not np.all(np.isfinite(survival)):
        raise ValueError(f"survival must be finite, of shape ({time.size}, {times.size}); got "
                         f"{survival.shape}.")
    outside = np.argwhere((survival < 0) | (survival > 1))
    if outside.size:
        i, k = outside[0]
        raise ValueError(f"survival must hold probabilities in [0, 1]; row {i}, time "
                         f"{times[k]:g} has {survival[i, k]:g}. Pass predicted survival "
                         "(e.g. predict_survival's 'survival'), not a risk score or a hazard.")
    G = kaplan_meier_steps(*train_or_test(train, time, event), censoring=True)
    with np.errstate(divide="ignore"):
        inv_t = np.where(G(times) > 0, 1.0 / G(times), 0.0)
        g_own = G(time)
        inv_own = np.where(g_own > 0, 1.0 / np.where(g_own > 0, g_own, 1.0), 0.0)
    case = event[:, None] & (time[:, None] <= times[None, :])
    control = time[:, None] > times[None, :]
    terms = (survival ** 2 * case * inv_own[:, None]
             + (1.0 - survival) ** 2 * control * inv_t[None, :])
    return terms.mean(axis=0)


def integrated_brier_score(time, event, survival, times, train=None) -> float:
    """The Brier score integrated over ``times`` (at least two) by the trapezoid rule, divided
    by their range."""
    times = np.atleast_1d(np.asarray(times, float))
    if times.size < 2:
        raise ValueError("the integrated Brier score needs at least two times.")
    if np.any(np.diff(times) <= 0):
        raise ValueError(f"the integrated Brier score needs increasing times, got "
                         f"{times.tolist()[:10]}: sort them (and the survival columns with "
                         "them).")
    bs = brier_score(time, event, survival, times, train)
    return float(np.trapezoid(bs, times) / (times[-1] - times[0]))
