"""Rubin's rules: one estimate and variance from the fits of m imputed data sets.

With Q_k the coefficients and U_k their covariance in data set k: the pooled estimate is their
mean Q, the within-imputation variance W the mean of the U_k, the between-imputation variance
B the sample covariance of the Q_k, and the total T = W + (1 + 1/m) B (Rubin, Multiple
Imputation for Nonresponse in Surveys, 1987).  Per coefficient: the relative increase in
variance r = (1 + 1/m) B / W, the share of variance due to missingness lambda = (1 + 1/m) B / T,
the degrees of freedom (m - 1) / lambda^2 (Rubin), or with the complete data's df_complete
Barnard and Rubin's (Small-sample degrees of freedom with multiple imputation, Biometrika
1999), and the fraction of missing information (r + 2 / (df + 3)) / (1 + r), as R's mice::pool
reports them.  Intervals and p-values use Student's t on those df.

A joint test of several coefficients (a spline's or a factor's columns) is Li, Raghunathan and
Rubin's D1 (Large-sample significance levels from multiply imputed data using moment-based
statistics and an F reference distribution, JASA 1991): D1 = Q' W^-1 Q / (k (1 + r1)) with
r1 = (1 + 1/m) tr(B W^-1) / k, against F(k, v) with v = 4 + (t - 4) (1 + (1 - 2/t) / r1)^2 for
t = k (m - 1) > 4, else t (1 + 1/k) (1 + r1)^2 / 2 (mice's D1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..core.statistical_result import TestResult
from ..regression.result import RATIO_NAMES


@dataclass
class PooledResult:
    """The pooled fit of m imputed data sets (engine.pool).

    coef : Series, the mean of the fits' coefficients
    cov : DataFrame, the total variance T = within + (1 + 1/m) between
    within, between : DataFrame, W and B
    fits : the m FitResults
    df_complete : the complete data's degrees of freedom (inf: large samples)
    level : the confidence level of ``summary``'s limits
    """

    coef: pd.Series
    cov: pd.DataFrame
    within: pd.DataFrame
    between: pd.DataFrame
    fits: list = field(repr=False)
    df_complete: float = np.inf
    level: float = 0.95

    @property
    def m(self) -> int:
        return len(self.fits)

    @property
    def se(self) -> pd.Series:
        return pd.Series(np.sqrt(np.diag(self.cov.to_numpy())), index=self.coef.index,
                         name="se")

    @property
    def summary(self) -> pd.DataFrame:
        """coef, its ratio (hr, irr, or: as the fits name it) with limits at ``level``, se,
        t, df, p, and riv (r), lambda and fmi (module docstring); one row per covariate."""
        q = self.coef.to_numpy()
        w = np.diag(self.within.to_numpy())
        b = np.diag(self.between.to_numpy())
        t = np.diag(self.cov.to_numpy())
        grow = 1.0 + 1.0 / self.m
        with np.errstate(divide="ignore", invalid="ignore"):
            riv = grow * b / w
            lam = grow * b / t
            df = _degrees_of_freedom(self.m, lam, self.df_complete)
            fmi = (riv + 2.0 / (df + 3.0)) / (1.0 + riv)
        se = np.sqrt(t)
        stat = q / se
        crit = stats.t.ppf(0.5 + self.level / 2, df)
        ratio = RATIO_NAMES.get(self.fits[0].spec.get("model"), "hr")
        out = pd.DataFrame({
            "coef": q, ratio: np.exp(q), "se": se,
            f"{ratio}_lower": np.exp(q - crit * se), f"{ratio}_upper": np.exp(q + crit * se),
            "t": stat, "df": df, "p": 2.0 * stats.t.sf(np.abs(stat), df),
            "riv": riv, "lambda": lam, "fmi": fmi}, index=self.coef.index)
        out.index.name = "covariate"
        out.attrs["m"] = self.m
        return out

    def wald_test(self, names) -> TestResult:
        """Li, Raghunathan and Rubin's D1 test that the coefficients ``names`` are all zero
        (module docstring): statistic D1 against F(k, table's df2)."""
        names = list(dict.fromkeys([names] if isinstance(names, str) else names))
        absent = [n for n in names if n not in self.coef.index]
        if absent:
            raise ValueError(f"{absent} are not coefficients of the pooled fit (its covariates "
                             f"are {list(self.coef.index)[:20]})")
        k, m = len(names), self.m
        q = self.coef[names].to_numpy()
        W = self.within.loc[names, names].to_numpy()
        B = self.between.loc[names, names].to_numpy()
        r1 = (1.0 + 1.0 / m) * np.trace(np.linalg.solve(W, B)) / k
        d1 = float(q @ np.linalg.solve(W, q)) / (k * (1.0 + r1))
        t = k * (m - 1)
        if r1 == 0:
            df2 = np.inf
        elif t > 4:
            df2 = 4.0 + (t - 4.0) * (1.0 + (1.0 - 2.0 / t) / r1) ** 2
        else:
            df2 = t * (1.0 + 1.0 / k) * (1.0 + r1) ** 2 / 2.0
        p = float(stats.f.sf(d1, k, df2))
        table = pd.DataFrame({"statistic": [d1], "df1": [k], "df2": [df2], "riv": [r1],
                              "p": [p]}, index=pd.Index(["D1"], name="test"))
        return TestResult(statistic=d1, df=k, p=p, table=table,
                          spec={"test": "D1 (Li, Raghunathan and Rubin 1991), F reference",
                                "names": names, "m": m})


def pool(fits, df_complete=None, level: float = 0.95) -> PooledResult:
    """Pool the fits of m >= 2 imputed data sets by Rubin's rules (module docstring).

    fits : FitResults of the same model and covariates, unpenalised, each reporting the
        variance it was asked for (model-based or robust: both pool alike)
    df_complete : the degrees of freedom the analysis would have without missing values, for
        Barnard and Rubin's df; None: infinite (large samples; Rubin's df)
    """
    fits = list(fits)
    if len(fits) < 2:
        raise ValueError(f"pooling needs the fits of at least 2 imputed data sets, got "
                         f"{len(fits)}")
    names = list(fits[0].coef.index)
    for k, res in enumerate(fits):
        if list(res.coef.index) != names:
            raise ValueError(f"fit {k} has coefficients {list(res.coef.index)[:10]}, fit 0 "
                             f"{names[:10]}: pool fits of the same covariates")
        if res.spec.get("model") != fits[0].spec.get("model"):
            raise ValueError("pool fits of one model: fit 0 is "
                             f"{fits[0].spec.get('model')}, fit {k} {res.spec.get('model')}")
        if res.penalty is not None:
            raise ValueError(f"fit {k} is penalised ({res.penalty}); Rubin's rules pool "
                             "estimates with their variance: fit without a penalty")
        if not np.isfinite(res.coef.to_numpy()).all() or \
                not np.isfinite(res.cov.to_numpy()).all():
            bad = [n for n in names if not (np.isfinite(res.coef[n])
                                            and np.isfinite(res.cov.at[n, n]))]
            raise ValueError(f"fit {k} has no finite estimate or variance for {bad[:10]} "
                             "(a diverging or aliased coefficient): leave those out")
    Q = np.vstack([res.coef.to_numpy() for res in fits])
    W = np.mean([res.cov.to_numpy() for res in fits], axis=0)
    # about the first fit's coefficients: identical fits give B = 0 exactly, not rounding
    B = np.atleast_2d(np.cov((Q - Q[0]).T, ddof=1))
    T = W + (1.0 + 1.0 / len(fits)) * B
    def frame(a):
        return pd.DataFrame(a, index=names, columns=names)

    df_complete = np.inf if df_complete is None else float(df_complete)
    if not df_complete > 0:
        raise ValueError(f"df_complete must be positive, got {df_complete}")
    return PooledResult(coef=pd.Series(Q.mean(axis=0), index=names, name="coef"),
                        cov=frame(T), within=frame(W), between=frame(B), fits=fits,
                        df_complete=df_complete, level=level)


def _degrees_of_freedom(m, lam, df_complete):
    """Rubin's (m - 1) / lambda^2, or Barnard and Rubin's combination with the observed data's
    df (df_complete + 1) / (df_complete + 3) df_complete (1 - lambda) when df_complete is
    finite."""
    old = (m - 1) / lam ** 2
    if not np.isfinite(df_complete):
        return old
    observed = (df_complete + 1.0) / (df_complete + 3.0) * df_complete * (1.0 - lam)
    return np.where(lam > 0, old * observed / (old + observed), observed)
