"""E-values (VanderWeele & Ding 2017, "Sensitivity analysis in observational research:
introducing the E-value"): the minimum strength of association, on the risk-ratio scale, that
an unmeasured confounder would need with both the treatment and the outcome to move the
estimate to ``true`` (1: explain it away), conditional on the measured covariates.

For a risk ratio RR > true: E = (RR + sqrt(RR (RR - true))) / true; below ``true`` both are
inverted first.  A hazard ratio is a risk ratio when the outcome is rare (under 15% at the end
of follow-up); otherwise it is first converted by RR = (1 - 0.5^sqrt(HR)) / (1 - 0.5^sqrt(1/HR))
(VanderWeele 2020), as the EValue R package's ``evalues.HR``.  The E-value of a confidence
interval is that of its limit closer to ``true``, and 1 when the interval contains it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

RARE_BELOW = 0.15   # events / n under which an outcome counts as rare (EValue's rule)


def evalue_rr(rr, true=1.0):
    """The E-value of risk ratio(s) ``rr`` against ``true`` (NaN where rr is not a finite
    positive number)."""
    rr = np.asarray(rr, dtype=np.float64)
    ok = np.isfinite(rr) & (rr > 0)
    safe = np.where(ok, rr, 1.0)
    up = safe >= true
    r = np.where(up, safe, 1.0 / safe)
    t = np.where(up, true, 1.0 / true)
    e = (r + np.sqrt(r * (r - t))) / t
    return np.where(ok, e, np.nan)


def rr_from_hr(hr, rare):
    """The risk ratio a hazard ratio stands for: itself for a rare outcome, else the
    square-root transformation."""
    hr = np.asarray(hr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        common = (1.0 - 0.5 ** np.sqrt(hr)) / (1.0 - 0.5 ** np.sqrt(1.0 / hr))
    return np.where(np.asarray(rare, bool), hr, common)


def evalues_hr(hr, lower, upper, rare, true=1.0) -> pd.DataFrame:
    """E-values of hazard ratio(s) and of their confidence limit closer to ``true``.

    Returns a DataFrame with columns evalue_point and evalue_ci (1 where the interval holds
    ``true``; NaN where the estimate or its limits are not finite)."""
    hr, lower, upper = (np.atleast_1d(np.asarray(a, np.float64)) for a in (hr, lower, upper))
    try:
        hr, lower, upper = np.broadcast_arrays(hr, lower, upper)
    except ValueError:
        raise ValueError(f"hr, lower and upper must have one length, got {hr.size}, "
                         f"{lower.size} and {upper.size} values.") from None
    for name, values in (("hr", hr), ("lower", lower), ("upper", upper)):
        below = np.flatnonzero(values < 0)
        if below.size:
            raise ValueError(f"{name} must hold hazard ratios (>= 0), got {values[below[0]]:g} "
                             f"at position {below[0]}; pass exp(coef), not the log scale.")
    if not (np.isfinite(true) and true > 0):
        raise ValueError(f"true must be a hazard ratio > 0 (1: no effect), got {true!r}")
    bad = hr[np.isfinite(hr) & np.isfinite(lower) & np.isfinite(upper)
             & ((lower > hr) | (hr > upper))]
    if bad.size:
        raise ValueError(f"the estimate {bad[0]:g} is outside its confidence interval; pass "
                         "lower <= hr <= upper.")
    rare = np.broadcast_to(np.asarray(rare, bool), hr.shape)
    true_rr = rr_from_hr(np.full(hr.shape, true), rare)
    point = evalue_rr(rr_from_hr(hr, rare), true_rr)
    limit = np.where(hr >= true, lower, upper)
    crosses = (lower <= true) & (true <= upper)
    ci = np.where(crosses, 1.0, evalue_rr(rr_from_hr(limit, rare), true_rr))
    ci = np.where(np.isfinite(lower) & np.isfinite(upper) & np.isfinite(hr), ci, np.nan)
    return pd.DataFrame({"evalue_point": point, "evalue_ci": ci})


def evalue_columns(table: pd.DataFrame) -> pd.DataFrame:
    """evalue_point and evalue_ci of every row of a sensitivity table (rare outcome where
    events / n < 0.15)."""
    rare = (table["events"] / table["n"].where(table["n"] > 0)).fillna(0.0) < RARE_BELOW
    out = evalues_hr(table["hr"], table["hr_lower"], table["hr_upper"], rare.to_numpy())
    out.index = table.index
    return out
