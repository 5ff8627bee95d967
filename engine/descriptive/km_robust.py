"""The robust (infinitesimal-jackknife) variance of a Kaplan-Meier curve and of its restricted
mean, R survfit's default for case weights that are not whole numbers, clusters, and subjects
with several events.

A row's influence on log S(t) is the derivative of log S(t) = sum_k log(1 - d_k / n_k) in its
weight (Therneau's survfitkm; R's influence.surv is -w_i S(t) A_i(t)):

    A_i(t) = sum_{t_k <= t} [dN_i(t_k) / (n_k - d_k) - Y_i(t_k) h_k],   h_k = d_k / (n_k (n_k - d_k)),

and var(log S(t)) = sum_c B_c(t)^2, B_c = sum_{i in c} w_i A_i over the rows of cluster c.  With
H(t) = sum_{t_k <= t} h_k, a row's term is w_i (H(start_i) - H(t)) while it is at risk and the
constant w_i (dN_i / (n - d) - H(stop_i) + H(start_i)) once it has ended, so B_c(t) = alpha_c +
beta_c H(t) with alpha_c, beta_c changing only where one of the cluster's rows starts or ends:
the sum of squares is sum alpha^2 + 2 H(t) sum alpha beta + H(t)^2 sum beta^2, running sums over
the O(N) changes, O(N log N) in all instead of the N x T influence matrix.  The restricted mean's
influence, sum_k width_k S(t_k) B_c(t_k), sums each cluster's piecewise state over the times it
holds.  From the time the curve reaches zero the influence is 0, as R's.
"""
from __future__ import annotations

import numpy as np


class Influence:
    """The clusters' (alpha, beta) states of one curve, from its rows (start, stop], weight w,
    event (bool) and cluster codes, and the curve's times, n_k (at_risk) and d_k (died)."""

    def __init__(self, start, stop, w, event, cluster, times, at_risk, died):
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(died > 0, died / (at_risk * (at_risk - died)), 0.0)
            jump = np.where(at_risk > died, 1.0 / (at_risk - died), 0.0)
        h = np.where(np.isfinite(h), h, 0.0)
        self.H = np.concatenate(([0.0], np.cumsum(h)))   # H[j]: through the j-th time
        # a row's start, then its end, side by side; a change at time x holds for the curve's
        # times >= x (from its slot on), until its cluster's next change
        when = np.column_stack((start, stop)).ravel()
        slot = np.searchsorted(times, when, side="left")
        through = slot + (times[np.minimum(slot, times.size - 1)] == when)  # times <= x
        own = np.where(event, jump[np.maximum(through[1::2] - 1, 0)], 0.0)
        d_alpha = np.column_stack((w * self.H[through[0::2]],
                                   w * (own - self.H[through[1::2]]))).ravel()
        d_beta = np.column_stack((-w, w)).ravel()
        who = np.repeat(cluster, 2)
        # in time order within each cluster: changes in one slot may come in any order (the
        # state between them holds for no time); rows listed by cluster need no sort
        key = who * np.int64(times.size + 1) + slot
        if np.any(key[1:] < key[:-1]):
            order = np.argsort(key, kind="stable")
            who, slot, d_alpha, d_beta = who[order], slot[order], d_alpha[order], d_beta[order]
        self.who, self.slot = who, slot
        self.alpha = _running_within(d_alpha, who)
        self.beta = _running_within(d_beta, who)
        last = np.append(who[1:] != who[:-1], True)
        self.until = np.where(last, times.size, np.roll(slot, -1))
        self.zero = np.cumsum((died > 0) & (at_risk <= died)) > 0

    def var_log(self):
        """var(log S) at each of the curve's times; +inf from the time it reaches zero (as the
        Greenwood variance: no estimate there)."""
        T = self.zero.size
        moments = (self.alpha * self.alpha, self.alpha * self.beta, self.beta * self.beta)
        sums = [np.cumsum(np.bincount(self.slot, m, T + 1) - np.bincount(self.until, m, T + 1))
                for m in moments]
        H = self.H[1:]
        var = sums[0][:-1] + 2.0 * H * sums[1][:-1] + H * H * sums[2][:-1]
        var = np.maximum(var, 0.0)                       # rounding below an exact zero
        return np.where(self.zero, np.inf, var)

    def rmst_var(self, weights):
        """var of sum_k weights_k S(t_k) (the restricted mean: weights_k the width of the k-th
        rectangle under S), given ``weights`` S_k times the widths per time."""
        G = np.concatenate(([0.0], np.cumsum(weights)))
        GH = np.concatenate(([0.0], np.cumsum(weights * self.H[1:])))
        per_change = (self.alpha * (G[self.until] - G[self.slot])
                      + self.beta * (GH[self.until] - GH[self.slot]))
        return float(np.sum(np.bincount(self.who, per_change) ** 2))


def _running_within(values, groups):
    """Cumulative sums of ``values`` restarting at each new value of the sorted ``groups``."""
    total = np.cumsum(values)
    first = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    offset = np.repeat(total[first] - values[first], np.diff(np.append(first, values.size)))
    return total - offset
