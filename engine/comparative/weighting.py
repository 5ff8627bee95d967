"""Balancing weights from a propensity score e = P(T = 1 | x), as WeightIt's get_w_from_ps:

  ATE  (inverse probability of treatment)  t / e + (1 - t) / (1 - e)
  ATT  (the treated as target)             t + (1 - t) e / (1 - e)
  ATC  (the comparators as target)         t (1 - e) / e + (1 - t)
  ATO  (overlap; Li, Morgan & Zaslavsky 2018)  t (1 - e) + (1 - t) e
  ATM  (matching weights; Li & Greene 2013)    min(e, 1 - e) / (t e + (1 - t)(1 - e))

Stabilising multiplies each arm's weights by that arm's share of the (case-weighted) sample
(Robins, Hernan & Brumback 2000; Xu et al. 2010), which keeps the weighted sample the size of
the data.  Trimming (Crump et al. 2009) gives weight 0 to persons whose PS lies outside
[alpha, 1 - alpha]; truncation sets the weights above their q-th quantile to that quantile
(WeightIt's trim(at = q): the quantile of R's default type 7, over the arm(s) the estimand
weights, the target arm of ATT and ATC keeping weight 1).  The effective sample size is Kish's
(sum w)^2 / sum w^2.
"""
from __future__ import annotations

import numpy as np

ESTIMANDS = ("ATE", "ATT", "ATC", "ATO", "ATM")


def balancing_weights(ps, treatment, estimand: str) -> np.ndarray:
    """The weight of every person for ``estimand`` (one of ESTIMANDS)."""
    e = np.asarray(ps, np.float64)
    t = np.asarray(treatment).astype(bool)
    if estimand == "ATE":
        return np.where(t, 1.0 / e, 1.0 / (1.0 - e))
    if estimand == "ATT":
        return np.where(t, 1.0, e / (1.0 - e))
    if estimand == "ATC":
        return np.where(t, (1.0 - e) / e, 1.0)
    if estimand == "ATO":
        return np.where(t, 1.0 - e, e)
    if estimand == "ATM":
        return np.minimum(e, 1.0 - e) / np.where(t, e, 1.0 - e)
    raise ValueError(f"estimand must be one of {list(ESTIMANDS)}, got {estimand!r}")


def stabilize(weights, treatment, case_weights=None) -> np.ndarray:
    """Each arm's weights times the arm's share of the sample (case-weighted)."""
    t = np.asarray(treatment).astype(bool)
    c = np.ones(t.size) if case_weights is None else np.asarray(case_weights, np.float64)
    share = c[t].sum() / c.sum()
    return np.asarray(weights, np.float64) * np.where(t, share, 1.0 - share)


def truncate(weights, treatment, estimand: str, quantile: float) -> np.ndarray:
    """Weights above their ``quantile`` (in (0.5, 1)) set to it, among the persons whose
    weight the estimand varies (the comparators for ATT, the treated for ATC, all otherwise)."""
    if not (_is_number(quantile) and 0.5 < quantile < 1.0):
        raise ValueError(f"truncate must be a quantile between 0.5 and 1 (e.g. 0.99), got "
                         f"{quantile!r}")
    w = np.asarray(weights, np.float64).copy()
    t = np.asarray(treatment).astype(bool)
    varied = ~t if estimand == "ATT" else t if estimand == "ATC" else np.ones(t.size, bool)
    cap = np.quantile(w[varied], quantile)
    w[varied] = np.minimum(w[varied], cap)
    return w


def outside_overlap(ps, alpha: float) -> np.ndarray:
    """Persons whose PS lies outside [alpha, 1 - alpha] (Crump et al. 2009 trim them)."""
    if not (_is_number(alpha) and 0.0 < alpha < 0.5):
        raise ValueError(f"trim must be a PS bound between 0 and 0.5 (e.g. 0.1 keeps "
                         f"0.1 <= PS <= 0.9), got {alpha!r}")
    e = np.asarray(ps, np.float64)
    return (e < alpha) | (e > 1.0 - alpha)


def effective_sample_size(weights) -> float:
    """Kish's (sum w)^2 / sum w^2 (0 for no positive weight)."""
    w = np.asarray(weights, np.float64)
    square = float(w @ w)
    return float(w.sum()) ** 2 / square if square > 0 else 0.0


def _is_number(value) -> bool:
    """A real number (not text, not a bool): what trim= and truncate= take."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
