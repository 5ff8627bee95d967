"""A logistic fit's summary names its ratio an odds ratio (``or``, ``or_lower``, ``or_upper``),
equal to statsmodels Logit's exp(params) and exp(conf_int()); Cox keeps its hazard ratio."""
from __future__ import annotations

import numpy as np
import statsmodels.api as sm

import engine


def test_logistic_summary_is_odds_ratios_equal_to_statsmodels_logit():
    rng = np.random.default_rng(7)
    X = np.column_stack([rng.normal(size=500), rng.random(500) < 0.3,
                         50 + 8 * rng.normal(size=500)])
    eta = -1.0 + 0.6 * X[:, 0] - 0.8 * X[:, 1] + 0.03 * (X[:, 2] - 50)
    y = (rng.random(500) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    cohort = engine.Cohort.from_arrays(time=np.ones(500), event=y, X=X, names=["x", "flag", "age"])
    s = engine.fit(cohort, model="logistic", tol=1e-12).summary

    assert list(s.columns) == ["coef", "or", "se", "or_lower", "or_upper", "p", "z", "penalized"]
    ref = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-12)
    np.testing.assert_allclose(s["or"].to_numpy(), np.exp(ref.params), rtol=1e-6)
    ci = np.exp(np.asarray(ref.conf_int(alpha=0.05)))
    np.testing.assert_allclose(s["or_lower"].to_numpy(), ci[:, 0], rtol=1e-6)
    np.testing.assert_allclose(s["or_upper"].to_numpy(), ci[:, 1], rtol=1e-6)
    np.testing.assert_allclose(s["p"].to_numpy(), ref.pvalues, rtol=1e-6)


def test_cox_summary_keeps_hazard_ratios(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=["fin"])
    s = engine.fit(cohort, model="cox").summary
    assert {"hr", "hr_lower", "hr_upper"} <= set(s.columns) and "or" not in s.columns
    np.testing.assert_allclose(s["hr"], np.exp(s["coef"]), rtol=1e-15)
