"""The global tests of a fit that R's ``summary(coxph)`` prints: likelihood ratio, Wald and score
(log-rank) tests of all the tested coefficients being zero.

Tested: the fit's unpenalised, finite coefficients (every coefficient of an unpenalised Cox
fit; logistic regression keeps its intercept out, its null model is the intercept alone).
LR = 2 (l(beta) - l(beta_0)); Wald = b' (V_tt)^-1 b, V = I(b)^-1 and t the tested coefficients;
score = U(beta_0)' I(beta_0)^-1 U(beta_0), with beta_0 the fit with the tested coefficients at
zero (its untested ones, the intercept, re-estimated: their score is zero there); each against
chi-square on their number.  A fit that reports the robust variance (weights that are not
counts, clusters) is tested as R's coxph does: Wald = b' (V_robust,tt)^-1 b, and a robust
score test U(beta_0)' (sum_c U_c U_c')^-1 U(beta_0) of the cluster sums at beta_0.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.linalg as la
from scipy import stats

from ..core.statistical_result import TestResult
from ..regression.robust import robust_middle


def global_tests(res) -> TestResult:
    """An engine.TestResult: statistic, df, p of the likelihood-ratio test (printed first by
    R), and ``table`` indexed by test ("likelihood ratio", "wald", "score"; "robust score"
    too where the fit reports the robust variance and tests every coefficient, as R's
    summary.coxph): statistic, df, p.  Under the robust variance (weights that are not
    counts, clusters) the Wald test reads it, as R's does; ``spec["note"]`` says which tests
    assume independent rows."""
    problem = getattr(res, "problem", None)
    if problem is None:
        raise ValueError("this FitResult holds no problem; run the tests on an engine.fit result")
    if problem.options.model == "fine_gray":
        raise ValueError("the likelihood-ratio and score tests need a likelihood; Fine-Gray's is "
                         "a pseudo-likelihood (use the Wald tests of res.summary).")
    if res.penalized.any():
        raise ValueError("global tests need an unpenalised fit: refit with penalty=None (a "
                         "penalty biases the statistics towards zero).")
    own = set(getattr(problem.model, "unpenalized", ()))
    tested = np.array([np.isfinite(b) and name not in own
                       for name, b in zip(res.coef.index, res.coef.to_numpy())])
    cols = np.flatnonzero(tested)
    if cols.size == 0:
        raise ValueError("no finite coefficient to test")
    # the information over the tested columns and the untested ones estimated beside them
    # (logistic regression's intercept): the tests of the tested read it with those profiled
    # out, as statsmodels' wald_test and the efficient score test do
    nuisance = np.flatnonzero(~tested & np.isfinite(res.coef.to_numpy()))
    both = np.concatenate([cols, nuisance])
    robust = res.variance == "robust"
    zero = np.zeros(problem.p)
    beta_0 = problem.solve(zero, zero, init=np.where(tested, 0.0, res.beta),
                           fixed=tested).beta.copy()
    ll_0, g_0, info_0 = problem.model.information(both)
    # R's robust score test: U(beta_0) against the spread of its cluster sums at beta_0
    middle_0 = (robust_middle(problem, beta_0, cols) if robust and nuisance.size == 0
                else None)
    problem.set_beta(res.beta)
    b = res.beta[cols]
    if robust:      # R's coxph: the Wald test of the variance the fit reports
        wald = float(b @ la.solve(res.cov_robust.to_numpy()[np.ix_(cols, cols)], b,
                                  assume_a="pos"))
    else:
        wald = float(b @ _profiled(problem.model.information(both)[2], cols.size) @ b)
    lr = 2.0 * (res.loglik - ll_0)
    score = float(g_0 @ la.solve(info_0, g_0, assume_a="pos"))
    df = cols.size
    rows = {"likelihood ratio": lr, "wald": wald, "score": score}
    if middle_0 is not None:
        g = g_0[:cols.size]
        rows["robust score"] = float(g @ la.solve(middle_0, g, assume_a="pos"))
    out = pd.DataFrame({"statistic": rows, "df": df,
                        "p": {k: float(stats.chi2.sf(v, df)) for k, v in rows.items()}})
    out.index.name = "test"
    lr_row = out.loc["likelihood ratio"]
    spec = {"test": "all tested coefficients zero", "model": res.spec["model"],
            "tested": [res.coef.index[j] for j in cols], "variance": res.variance}
    if robust:
        spec["note"] = ("the likelihood ratio and score tests assume independent rows; the Wald "
                        "and robust score tests do not (R's summary.coxph)")
    return TestResult(statistic=float(lr_row["statistic"]), df=int(lr_row["df"]),
                      p=float(lr_row["p"]), table=out, spec=spec)


def _profiled(info, k):
    """The information of the first k columns with the others profiled out (the inverse of
    the covariance's first k x k block): I_tt - I_tn I_nn^-1 I_nt; I_tt itself when there
    are no others (Cox)."""
    if info.shape[0] == k:
        return info
    tt, tn, nn = info[:k, :k], info[:k, k:], info[k:, k:]
    return tt - tn @ la.solve(nn, tn.T, assume_a="pos")
