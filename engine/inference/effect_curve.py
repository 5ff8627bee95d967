"""The shape of a covariate's effect: the hazard ratio against the exposure, relative to a
reference value, with a pointwise confidence band, as rms's ``Predict(fit, x, ref.zero=TRUE)``
and ``contrast``.

For each value a of the exposure, log HR(a) = (x(a) - x(ref))' b, x(.) the fit's design row
(spline basis, interactions) with the other covariates held at their adjust-to values (median
or most frequent value, as rms's datadist), and its variance d' V d with d = x(a) - x(ref) and
V the fit's covariance.  The band is exp(log HR +/- z se).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def effect_curve(res, variable, at, reference=None, adjust_to=None,
                 level: float = 0.95) -> pd.DataFrame:
    """Hazard ratio of ``variable`` at each value of ``at`` against ``reference`` (a Fine-Gray
    fit's subdistribution hazard ratio, a logistic fit's odds ratio, in the same columns).

    Parameters
    ----------
    res : FitResult of a cohort built from a formula
    variable : a column the formula reads, e.g. "bmi" in ``ns(bmi, df=4)``
    at : values of the exposure (inside the range the fit saw: splines do not extrapolate)
    reference : the value with HR = 1; default its median (mode for categories)
    adjust_to : dict, other variable -> value to hold it at (default medians / modes); matters
        only where ``variable`` interacts with it
    level : confidence level of the pointwise band

    Returns
    -------
    DataFrame with columns variable, log_hr, se, hr, lower, upper; one row per value of ``at``
    """
    formula = res.formula
    if formula is None:
        raise ValueError("effect_curve rebuilds design rows from the fit's formula; build the "
                         f"cohort with Cohort.from_frame(..., formula='... {variable} ...').")
    if variable not in formula.variables:
        raise ValueError(f"{variable!r} is not a variable of the formula {formula.text!r}; its "
                         f"variables are {formula.variables}.")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}.")
    held = dict(formula.adjust_to)
    unknown = sorted(set(adjust_to or {}) - set(held))
    if unknown:
        raise ValueError(f"adjust_to names {unknown}, not variables of the formula "
                         f"{formula.text!r} ({formula.variables}).")
    held.update(adjust_to or {})
    reference = held[variable] if reference is None else reference
    values = list(np.atleast_1d(np.asarray(at, dtype=object)))
    rows = pd.DataFrame({name: [value] * (len(values) + 1) for name, value in held.items()})
    rows[variable] = pd.Series(values + [reference], dtype=None).infer_objects()
    X = res.design_matrix(rows).toarray()
    d = X[:-1] - X[-1]
    used = res.coef.index[np.any(d != 0, axis=0)]
    fixed = [name for name in used if not np.isfinite(res.cov.at[name, name])]
    if fixed:
        raise ValueError(f"{fixed} are penalised or infinite in this fit, so the curve has no "
                         "variance. Refit with them unpenalized.")
    d_used = d[:, np.isin(res.coef.index, used)]
    log_hr = d_used @ res.coef[used].to_numpy()
    se = np.sqrt(np.einsum("ij,jk,ik->i", d_used, res.cov.loc[used, used].to_numpy(), d_used))
    z = stats.norm.ppf(0.5 + level / 2.0)
    return pd.DataFrame({variable: values, "log_hr": log_hr, "se": se, "hr": np.exp(log_hr),
                         "lower": np.exp(log_hr - z * se), "upper": np.exp(log_hr + z * se)})
