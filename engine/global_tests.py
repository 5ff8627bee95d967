"""The global tests of a Cox fit that R's summary(coxph) prints: likelihood ratio, Wald and
score (log-rank) tests of beta = 0, each on p degrees of freedom.

    LR = 2 (l(beta_hat) - l(0)),  Wald = beta_hat' I(beta_hat) beta_hat,
    score = U(0)' I(0)^-1 U(0)

l the log partial likelihood (the fit's ties and strata), U its gradient, I the observed
information; with one binary covariate, Breslow ties and no tied event times the score test
is the log-rank test.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .fit import gradient, loglik
from .ph_test import check_cox_fit, information_at


def global_tests(res, cohort) -> pd.DataFrame:
    """statistic, df, p of the likelihood-ratio, Wald and score tests of an unpenalised Cox
    fit ``res`` of ``cohort`` (aliased NaN coefficients left out, as R)."""
    keep, beta, ties = check_cox_fit(res, cohort)
    zeros = np.zeros(cohort.p)
    ratio = 2.0 * (res.loglik - loglik(cohort, zeros, ties=ties))
    wald = beta @ information_at(cohort, beta, ties, keep).to_numpy() @ beta
    u0 = gradient(cohort, zeros, ties=ties)[keep]
    score = u0 @ np.linalg.solve(information_at(cohort, zeros[keep], ties, keep).to_numpy(), u0)
    df = len(keep)
    out = pd.DataFrame({"statistic": [ratio, wald, score], "df": df},
                       index=pd.Index(["likelihood ratio", "wald", "score"], name="test"))
    out["p"] = stats.chi2.sf(out["statistic"], df)
    return out
