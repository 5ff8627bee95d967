"""The robust (infinitesimal-jackknife) variance of a Kaplan-Meier curve and of its restricted
mean, R survfit's default for case weights that are not whole numbers, clusters, and subjects
with several events.

A row's influence on log S(t) is the derivative of log S(t) = sum_k log(1 - d_k / n_k) in its
weight (Therneau's survfitkm; R's influence.surv is -w_i S(t) A_i(t)):

    A_i(t) = sum_{t_k <= t} [dN_i(t_k) / (n_k - d_k) - Y_i(t_k) h_k],
    h_k = d_k / (n_k (n_k - d_k)),

and var(log S(t)) = sum_c (sum_{i in c} w_i A_i(t))^2 over the clusters c.  With H(t) =
sum_{t_k <= t} h_k, a row's term is w_i (H(start_i) - H(t)) while it is at risk and the
constant w_i (dN_i / (n - d) - H(stop_i) + H(start_i)) once it has ended: coefficients of the
basis (1, H(t)) for cluster_states.  The restricted mean's influence is sum_k width_k S(t_k)
times the log's.  From the time the curve reaches zero the influence is 0, as R's.
"""
from __future__ import annotations

import numpy as np

from .cluster_states import ClusterStates


class Influence:
    """The clusters' influences on one curve, from its rows (start, stop], weight w, event
    (bool) and cluster codes, and the curve's times, n_k (at_risk) and d_k (died)."""

    def __init__(self, start, stop, w, event, cluster, times, at_risk, died):
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(died > 0, died / (at_risk * (at_risk - died)), 0.0)
            jump = np.where(at_risk > died, 1.0 / (at_risk - died), 0.0)
        h = np.where(np.isfinite(h), h, 0.0)
        H = np.concatenate(([0.0], np.cumsum(h)))       # H[j]: through the j-th time
        through_start = np.searchsorted(times, start, side="right")
        through_stop = np.searchsorted(times, stop, side="right")
        own = np.where(event, jump[np.maximum(through_stop - 1, 0)], 0.0)
        self.states = ClusterStates(start, stop, cluster,
                                    (w * H[through_start], -w),
                                    (w * (own - H[through_stop]), w), times)
        self.basis = np.stack((np.ones(times.size), H[1:]))
        self.zero = np.cumsum((died > 0) & (at_risk <= died)) > 0

    def var_log(self):
        """var(log S) at each of the curve's times; +inf from the time it reaches zero (as the
        Greenwood variance: no estimate there)."""
        return np.where(self.zero, np.inf, self.states.variance(self.basis))

    def rmst_influence(self, weights, clusters: int):
        """Each cluster's influence on sum_k weights_k log S(t_k) (array over the ``clusters``
        codes), given ``weights`` S_k times the width of the k-th rectangle under S (0 beyond
        tau): up to its sign, the restricted mean's influence."""
        return self.states.integral_influence(weights, self.basis, clusters)
