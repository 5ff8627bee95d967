"""Predictions of a Poisson regression of rates for new covariate rows, as R's
``predict.glm(se.fit=TRUE)``: the linear predictor x'b (the log rate per unit of time, the
offset left out), the rate exp(x'b), and the expected events over a row's person-time.

The linear predictor's standard error is sqrt(x' V x), V the coefficients' covariance (the
fit's reported one: model-based or the sandwich); the rate's and the expected count's are the
delta method's (value x se(x'b)), and their limits exp(x'b +/- z se) (times the person-time),
which stay positive.  A penalised fit has no covariance: its predictions come without
standard errors (NaN).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats

from ..core.arguments import check_level
from .models.logistic import INTERCEPT
from .predict import covariance

RATE_TYPES = ("lp", "rate", "expected")


def predict_rates(res, newdata=None, type: str = "rate", level: float = 0.95) -> pd.DataFrame:
    """fit, se, lower and upper of each row of ``newdata`` (a DataFrame with the fit's
    covariate columns, and for ``type="expected"`` its time column, and entry column when it
    had one; default the fitted rows).

    type : "lp" (x'b, the log rate per unit of time), "rate" (exp(x'b), events per unit of
        the time column) or "expected" (the rate times the row's person-time, stop - start).
    level : the limits' confidence level.
    """
    if type not in RATE_TYPES:
        raise ValueError(f"type must be one of {RATE_TYPES} for a Poisson fit, got {type!r}")
    check_level(level)
    if res.spec.get("bands") or res.spec.get("cut_points"):
        raise ValueError("this fit splits follow-up into bands or at cut points: a row's rate "
                         "changes over follow-up, so it has no single prediction. Predict "
                         "from a fit without bands and cut_points, or add up the rates of "
                         "its bands.")
    names = list(res.coef.index)
    Z, index, person_time = _rows(res, newdata, names, type == "expected")
    beta = res.coef.to_numpy(float)
    keep, V = covariance(res)
    lp = np.asarray(Z[:, keep] @ beta[keep]).ravel()
    se = np.full(lp.size, np.nan)
    if V is not None:
        zk = sp.csr_matrix(Z[:, keep])
        se = np.sqrt(np.asarray(zk.multiply(zk @ V).sum(axis=1)).ravel())
    z = stats.norm.ppf(0.5 + level / 2)
    if type == "lp":
        return pd.DataFrame({"fit": lp, "se": se, "lower": lp - z * se, "upper": lp + z * se},
                            index=index)
    scale = 1.0 if person_time is None else person_time
    fit = np.exp(lp) * scale
    return pd.DataFrame({"fit": fit, "se": fit * se, "lower": np.exp(lp - z * se) * scale,
                         "upper": np.exp(lp + z * se) * scale}, index=index)


def _rows(res, newdata, names, expected):
    """(the design of the rows in ``names`` order, with the intercept's column of ones; their
    index; their person-time when ``expected``, else None)."""
    cohort = res.problem.cohort if res.problem is not None else None
    if newdata is not None and not isinstance(newdata, pd.DataFrame):
        raise TypeError(f"newdata must be a DataFrame, got {type(newdata).__name__}")
    if newdata is not None and res.formula is not None:
        Z = sp.csc_matrix(res.design_matrix(newdata))       # the intercept's column in place
    else:
        if cohort is None:
            raise ValueError("this FitResult keeps no data (problem=None): refit with "
                             "engine.fit.")
        X = sp.csc_matrix(cohort.X if newdata is None else cohort.encode(newdata)[0])
        at = names.index(INTERCEPT)
        Z = sp.hstack([X[:, :at], sp.csc_matrix(np.ones((X.shape[0], 1))), X[:, at:]],
                      format="csc")
    if newdata is None:
        start = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start, float)
        t = np.asarray(cohort.time, float) - start
        return Z, pd.RangeIndex(cohort.n), t if expected else None
    return Z, newdata.index, _person_time(res, newdata) if expected else None


def _person_time(res, newdata) -> np.ndarray:
    """stop - start of each row of ``newdata``, from the fit's time (and entry) columns."""
    source = res.problem.subjects.source if res.problem is not None else {}
    time, start = source.get("time"), source.get("start")
    missing = [c for c in (time, start) if c and c not in newdata.columns]
    if not time or missing:
        raise ValueError(f"type='expected' needs each row's person-time: newdata must hold the "
                         f"fit's time column{' and entry column' if start else ''} "
                         f"({', '.join(repr(c) for c in (time, start) if c)}); missing "
                         f"{missing or [time]}.")
    stop = pd.to_numeric(newdata[time], errors="coerce").to_numpy(float)
    begin = (np.zeros(len(newdata)) if not start
             else pd.to_numeric(newdata[start], errors="coerce").to_numpy(float))
    t = stop - begin
    bad = np.flatnonzero(~np.isfinite(t) | (t < 0))
    if bad.size:
        raise ValueError(f"type='expected' needs finite person-time >= 0 in newdata's "
                         f"{time!r}; rows {list(newdata.index[bad[:5]])} have {t[bad[:5]]}.")
    return t
