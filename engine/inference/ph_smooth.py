"""beta(t): the smooth of the scaled Schoenfeld residuals that R's plot.cox.zph draws to show how a
Cox coefficient changes over time (Grambsch and Therneau 1994), with its pointwise band.

For each coefficient j the residuals y_i (engine.scaled_schoenfeld) are regressed on a natural
cubic spline of the transformed event time g_i, with ``df`` basis functions (intercept
included) whose interior knots sit at the quantiles of the prediction grid and the g_i pooled,
as R's ns(c(pred.x, x), df=df, intercept=TRUE); the fit is evaluated on ``points`` equally
spaced values of g.  The band is yhat +/- 2 sqrt(var_j p(g)'(X'X)^-1 p(g)), var_j = d V_jj the
variance of a scaled residual (d events, V the fit's inverse information), as R draws it
(R's cox.zph keeps var = d V).  The fitted values do not depend on the spline basis, only on
its space, so the basis here is the truncated-power one of a natural cubic spline (Hastie,
Tibshirani and Friedman, The Elements of Statistical Learning, eq. 5.4-5.5).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .ph_test import Zph, cox_fit_rows

BAND = 2.0      # R's plot.cox.zph draws +/- 2 standard errors


def ph_smooth(res, cohort=None, df: int = 4, points: int = 40,
              transform: str = "km") -> pd.DataFrame:
    """beta_j(t) smooths of a Cox fit, one block of ``points`` rows per coefficient.

    Returns a DataFrame: covariate, g (transformed time), time (the event time where the
    transform reaches g, interpolated), beta, lower, upper.
    """
    check_smooth(df, points)
    z = Zph(*cox_fit_rows(res, cohort), transform)
    return smooths(z.scaled_schoenfeld(), z.information(), df, points)


def check_smooth(df, points) -> None:
    """A ValueError naming a bad ``df`` or ``points`` of ph_smooth."""
    if not (isinstance(df, int) and df >= 2):
        raise ValueError(f"df must be an integer >= 2, got {df!r}")
    if not (isinstance(points, int) and points >= 2):
        raise ValueError(f"points must be an integer >= 2, got {points!r}")


def smooths(resid, info, df, points) -> pd.DataFrame:
    """ph_smooth's table from the scaled Schoenfeld residuals and the information of the fit
    (Zph.scaled_schoenfeld and Zph.information)."""
    covariance, names = np.linalg.inv(info.to_numpy()), list(info.index)
    g, time = resid["g"].to_numpy(float), resid["time"].to_numpy(float)
    grid = np.linspace(g.min(), g.max(), points)
    order = np.argsort(g, kind="stable")
    grid_time = np.interp(grid, g[order], time[order])
    pooled = np.concatenate([grid, g])
    knots = np.quantile(pooled, np.linspace(0, 1, df)[1:-1])
    bounds = (pooled.min(), pooled.max())
    basis = natural_spline(g, knots, bounds)     # at every event: each covariate's rows of it
    P = natural_spline(grid, knots, bounds)
    frames = []
    for j, name in enumerate(names):
        y = resid[name].to_numpy(float)
        keep = np.isfinite(y)        # structural zeros of a stratum are NaN (R: NA)
        X = basis if keep.all() else basis[keep]
        coef, *_ = np.linalg.lstsq(X, y[keep], rcond=None)
        xtx_inv = np.linalg.pinv(X.T @ X)
        seval = np.einsum("ij,jk,ik->i", P, xtx_inv, P)
        half = BAND * np.sqrt(len(y) * covariance[j, j] * seval)
        yhat = P @ coef
        frames.append(pd.DataFrame({"covariate": name, "g": grid, "time": grid_time,
                                    "beta": yhat, "lower": yhat - half, "upper": yhat + half}))
    return pd.concat(frames, ignore_index=True)


def natural_spline(x, knots, bounds) -> np.ndarray:
    """Truncated-power basis (n, len(knots) + 2) of the natural cubic splines with the given
    interior knots and boundary knots (linear beyond them): 1, x, d_k(x) - d_K-1(x)."""
    all_knots = np.concatenate([[bounds[0]], np.asarray(knots, float), [bounds[1]]])
    last = all_knots[-1]

    def d(k):
        return ((np.maximum(x - all_knots[k], 0) ** 3 - np.maximum(x - last, 0) ** 3)
                / (last - all_knots[k]))

    columns = [np.ones_like(x), x]
    columns += [d(k) - d(len(all_knots) - 2) for k in range(len(all_knots) - 2)]
    return np.column_stack(columns)
