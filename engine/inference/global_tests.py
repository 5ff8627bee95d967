"""The global tests of a fit that R's ``summary(coxph)`` prints: likelihood ratio, Wald and score
(log-rank) tests of all the tested coefficients being zero.

Tested: the fit's unpenalised, finite coefficients (every coefficient of an unpenalised Cox
fit; logistic regression keeps its intercept out, its null model is the intercept alone).
LR = 2 (l(beta) - l(beta_0)); Wald = b' (V_tt)^-1 b, V = I(b)^-1 and t the tested coefficients;
score = U(beta_0)' I(beta_0)^-1 U(beta_0), with beta_0 the fit with the tested coefficients at
zero (its untested ones, the intercept, re-estimated: their score is zero there); each against
chi-square on their number.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.linalg as la
from scipy import stats

from ..core.statistical_result import TestResult


def global_tests(res) -> TestResult:
    """An engine.TestResult: statistic, df, p of the likelihood-ratio test (printed first by
    R), and ``table`` indexed by test ("likelihood ratio", "wald", "score"): statistic, df, p."""
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
    zero = np.zeros(problem.p)
    problem.solve(zero, zero, init=np.where(tested, 0.0, res.beta), fixed=tested)
    ll_0, g_0, info_0 = problem.model.information(both)
    problem.set_beta(res.beta)
    info = problem.model.information(both)[2]
    b = res.beta[cols]
    lr = 2.0 * (res.loglik - ll_0)
    wald = float(b @ _profiled(info, cols.size) @ b)
    score = float(g_0 @ la.solve(info_0, g_0, assume_a="pos"))
    df = cols.size
    rows = {"likelihood ratio": lr, "wald": wald, "score": score}
    out = pd.DataFrame({"statistic": rows, "df": df,
                        "p": {k: float(stats.chi2.sf(v, df)) for k, v in rows.items()}})
    out.index.name = "test"
    lr_row = out.loc["likelihood ratio"]
    return TestResult(statistic=float(lr_row["statistic"]), df=int(lr_row["df"]),
                      p=float(lr_row["p"]), table=out,
                      spec={"test": "all tested coefficients zero", "model": res.spec["model"],
                            "tested": [res.coef.index[j] for j in cols]})


def _profiled(info, k):
    """The information of the first k columns with the others profiled out (the inverse of
    the covariance's first k x k block): I_tt - I_tn I_nn^-1 I_nt; I_tt itself when there
    are no others (Cox)."""
    if info.shape[0] == k:
        return info
    tt, tn, nn = info[:k, :k], info[:k, k:], info[k:, k:]
    return tt - tn @ la.solve(nn, tn.T, assume_a="pos")
