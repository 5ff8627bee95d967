"""The cumulative/dynamic time-dependent AUC: at time t, the cases are the rows with an event by
t, the controls those still event-free after t, and AUC(t) = P(risk_case > risk_control) with
each case weighted by 1/G(t_i) (Uno et al. 2007; Hung & Chiang, "Estimation methods for
time-dependent AUC models with survival data", Canadian Journal of Statistics 2010).  The mean
AUC integrates AUC(t) against the Kaplan-Meier estimate of the event time over the times asked
(Lambert & Chevret 2014), as scikit-survival's cumulative_dynamic_auc.
"""
from __future__ import annotations

import numpy as np

from ..core.sorted_search import searched
from .ipcw import kaplan_meier_steps
from .survival_data import checked, checked_times, train_or_test


def time_dependent_auc(time, event, risk, times, train=None,
                       tied_tol: float = 1e-8) -> tuple[np.ndarray, float]:
    """(AUC at each of ``times``, mean AUC) of the risk scores ``risk``: shape (n,), or (n, T)
    for a score that changes with t (e.g. 1 - predicted survival at t).  ``train`` as in
    uno_concordance; the times must lie within the test data's follow-up."""
    time, event = checked(time, event)
    times = checked_times(times, time)
    risk = np.asarray(risk, float)
    if risk.ndim == 1:
        risk = np.repeat(risk[:, None], times.size, axis=1)
    if risk.shape != (time.size, times.size) or not np.all(np.isfinite(risk)):
        raise ValueError(f"risk must be finite, of shape ({time.size},) or ({time.size}, "
                         f"{times.size}); got {risk.shape}.")
    G = kaplan_meier_steps(*train_or_test(train, time, event), censoring=True)
    ipcw = np.zeros(time.size)
    cases = event & (time <= times.max())      # the only events any AUC here weighs: one
    ipcw[cases] = 1.0 / G(time[cases])         # after the last time may have G = 0
    auc = np.empty(times.size)
    for k, t in enumerate(times):
        case = event & (time <= t)
        control = time > t
        if not case.any() or not control.any():
            raise ValueError(f"at time {t:g} there are no cases or no controls: the AUC is not "
                             "defined; choose times inside the follow-up.")
        ctrl = np.sort(risk[control, k])
        at = risk[case, k]
        order = np.argsort(at, kind="stable")
        below = searched(ctrl, at - tied_tol, side="left", order=order)
        upto = searched(ctrl, at + tied_tol, side="right", order=order)
        score = below + 0.5 * (upto - below)
        auc[k] = (ipcw[case] @ score) / (ipcw[case].sum() * ctrl.size)
    if times.size == 1:
        return auc, float(auc[0])
    S = kaplan_meier_steps(time, event)(times)
    drop = -np.diff(np.concatenate(([1.0], S)))
    return auc, float(auc @ drop / (1.0 - S[-1]))
