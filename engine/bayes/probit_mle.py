"""engine.probit_mle: the maximum-likelihood probit regression of a 0/1 outcome.

The point estimate the horseshoe probit posterior (engine.sample) is read against: the same
design (the cohort's covariates and an intercept, on the covariates' own scale) with a flat
prior. Newton-Raphson on the log-likelihood sum_i log Phi(q_i eta_i), q_i = 2 y_i - 1, with
the observed information sum_i lambda_i (lambda_i + eta_i) x_i x_i', lambda_i =
q_i phi(eta_i) / Phi(q_i eta_i) (the inverse Mills ratio; the log-likelihood is concave), and
step halving. When the predictors separate the outcome the maximum is at infinity: that is a
CohortError, as are fewer rows than coefficients.
"""
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, special, stats

from ..core.arguments import check_binary_cohort
from ..core.errors import CohortError

INTERCEPT = "(intercept)"   # the name engine.sample gives the intercept
MAX_ITER = 60
TOL = 1e-10


@dataclass
class ProbitMLE:
    """A probit fit: coefficients and standard errors (from the observed information)."""

    coef: pd.Series
    se: pd.Series
    loglik: float
    n_iter: int

    @property
    def summary(self):
        """DataFrame per coefficient: coef, se, z, p (two-sided Wald), lower/upper 95%."""
        z = self.coef / self.se
        half = stats.norm.ppf(0.975) * self.se
        return pd.DataFrame({"coef": self.coef, "se": self.se, "z": z,
                             "p": 2 * stats.norm.sf(np.abs(z)),
                             "lower": self.coef - half, "upper": self.coef + half})


def _loglik(eta, q):
    return float(special.log_ndtr(q * eta).sum())


def probit_mle(cohort, intercept=True):
    """Probit regression of ``cohort.event`` (0/1) on its covariates by maximum likelihood.

    Parameters
    ----------
    cohort : engine.Cohort with a 0/1 event (``Cohort.from_frame(df, time=None, event="y")``).
    intercept : add an "(intercept)" coefficient (named as engine.sample names it).

    Returns
    -------
    ProbitMLE
    """
    check_binary_cohort(cohort, "the probit MLE")
    name = cohort.source.get("event", "event")
    X = cohort.X.toarray()
    names = list(cohort.names)
    if intercept:
        X = np.hstack([np.ones((X.shape[0], 1)), X])
        names = [INTERCEPT, *names]
    n, k = X.shape
    if n <= k:
        raise CohortError(f"too few rows for the probit MLE: {n} rows for {k} coefficients "
                          "(it needs more rows than coefficients); choose fewer predictors.")
    q = 2.0 * np.asarray(cohort.event, dtype=np.float64) - 1.0
    beta = np.zeros(k)
    eta = np.zeros(n)
    ll = _loglik(eta, q)
    for iteration in range(1, MAX_ITER + 1):
        mills = q * np.exp(stats.norm.logpdf(eta) - special.log_ndtr(q * eta))
        info = (X * (mills * (mills + eta))[:, None]).T @ X
        try:
            step = linalg.cho_solve(linalg.cho_factor(info), X.T @ mills)
        except (linalg.LinAlgError, ValueError):
            raise CohortError(f"the predictors of {name!r} are collinear: the probit "
                              "information matrix is singular; drop a redundant predictor."
                              ) from None
        t = 1.0
        while t > 1e-12 and _loglik(X @ (beta + t * step), q) < ll:
            t /= 2
        beta = beta + t * step
        eta = X @ beta
        ll = _loglik(eta, q)
        if np.max(np.abs(t * step)) <= TOL * (1.0 + np.max(np.abs(beta))):
            break
    else:
        raise CohortError(f"the predictors separate {name!r} (the probit MLE does not exist: "
                          f"coefficients grow without bound over {MAX_ITER} Newton steps); drop "
                          "predictors or read the horseshoe posterior, which exists.")
    mills = q * np.exp(stats.norm.logpdf(eta) - special.log_ndtr(q * eta))
    info = (X * (mills * (mills + eta))[:, None]).T @ X
    se = np.sqrt(np.diag(linalg.inv(info)))
    index = pd.Index(names, name="coefficient")
    return ProbitMLE(coef=pd.Series(beta, index=index), se=pd.Series(se, index=index),
                     loglik=ll, n_iter=iteration)
