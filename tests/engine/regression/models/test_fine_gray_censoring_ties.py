"""Fine-Gray's two censoring-weight tie rules against a brute-force definition written here.

"crr" (cmprsk::crr, the default): a row with an event at u is at risk for a censoring at u in
the censoring Kaplan-Meier G. "finegray" (R survival finegray(), Geskus 2011): it is not. A
competing row r stays in the risk set at a cause-1 event time t > y_r with weight
G(t-)/G(y_r-) (Fine & Gray 1999). The oracle computes G and the pseudo-likelihood by these
definitions (loops, no cleverness) and maximises it with scipy; the engine must agree to 1e-6.
"""
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

import engine

RNG = np.random.default_rng(2011)
N = 80
DF = pd.DataFrame({"t": RNG.integers(1, 12, N).astype(float),      # whole days: many ties
                   "e": RNG.choice([0, 1, 2], N, p=[0.35, 0.4, 0.25]),
                   "x": RNG.normal(size=N), "z": RNG.integers(0, 2, N).astype(float)})


def _G_left(t, censored, rule):
    """G(s-) = prod_{u < s} (1 - d_c(u) / Y(u)) at every s, by the definition."""
    def G(s):
        out = 1.0
        for u in np.unique(t[censored]):
            if u >= s:
                continue
            d = np.sum(censored & (t == u))
            at_risk = np.sum(t > u) + np.sum((t == u) & (censored if rule == "finegray"
                                                          else np.ones_like(censored)))
            out *= 1.0 - d / at_risk
        return out
    return np.array([G(s) for s in t])


def _brute_loglik_grad(beta, X, t, e, rule):
    Gl = _G_left(t, e == 0, rule)
    eta = X @ beta
    ll, grad = 0.0, np.zeros(X.shape[1])
    for i in np.flatnonzero(e == 1):
        w = np.where(t >= t[i], 1.0, 0.0)
        earlier_competing = (e == 2) & (t < t[i])
        w[earlier_competing] = Gl[i] / Gl[earlier_competing]
        r = w * np.exp(eta)
        ll += eta[i] - np.log(r.sum())
        grad += X[i] - (r @ X) / r.sum()
    return ll, grad


def _brute_fit(df, rule):
    X, t, e = df[["x", "z"]].to_numpy(), df["t"].to_numpy(), df["e"].to_numpy()
    res = minimize(lambda b: tuple(-v for v in _brute_loglik_grad(b, X, t, e, rule)),
                   np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 500})
    return res.x, -res.fun


def _fit(df, rule):
    cohort = engine.Cohort.from_frame(df, "t", "e", covariates=["x", "z"],
                                      competing_risks=True)
    return engine.fit(cohort, model="fine_gray", censoring_ties=rule)


@pytest.mark.parametrize("rule", ["crr", "finegray"])
def test_each_rule_equals_its_brute_force_definition(rule):
    beta, ll = _brute_fit(DF, rule)
    res = _fit(DF, rule)
    np.testing.assert_allclose(res.coef.to_numpy(), beta, rtol=1e-6, atol=1e-8)
    assert res.loglik == pytest.approx(ll, rel=1e-9)
    assert res.spec["censoring_ties"] == rule
    assert f"censoring weights: {rule} tie rule" in str(res)


def test_the_rules_differ_only_where_censorings_tie_with_events():
    crr, fg = _fit(DF, "crr"), _fit(DF, "finegray")
    assert np.max(np.abs(crr.coef - fg.coef)) > 1e-3
    untied = DF.assign(t=DF["t"] + np.where(DF["e"] == 0, 0.5, 0.0))    # censorings apart
    np.testing.assert_allclose(_fit(untied, "crr").coef, _fit(untied, "finegray").coef,
                               rtol=1e-12)


def test_finegray_is_crr_on_data_whose_events_precede_tied_censorings():
    """The definition of the rule in the variance too: moving every event 1e-6 earlier makes
    crr's rule see what finegray's sees, so coefficients, loglik and the sandwich SEs agree."""
    fg = _fit(DF, "finegray")
    moved = _fit(DF.assign(t=DF["t"] - np.where(DF["e"] > 0, 1e-6, 0.0)), "crr")
    np.testing.assert_allclose(fg.coef, moved.coef, rtol=1e-9)
    np.testing.assert_allclose(fg.se, moved.se, rtol=1e-9)
    assert fg.loglik == pytest.approx(moved.loglik, rel=1e-12)


def test_default_is_crr_and_a_typo_is_refused():
    assert _fit(DF, "crr").coef.equals(engine.fit(engine.Cohort.from_frame(
        DF, "t", "e", covariates=["x", "z"], competing_risks=True), model="fine_gray").coef)
    with pytest.raises(ValueError, match=r"censoring_ties.*'crr', 'finegray'"):
        _fit(DF, "geskus")


def test_loglik_and_gradient_take_the_rule():
    cohort = engine.Cohort.from_frame(DF, "t", "e", covariates=["x", "z"], competing_risks=True)
    beta = np.array([0.3, -0.2])
    X, t, e = DF[["x", "z"]].to_numpy(), DF["t"].to_numpy(), DF["e"].to_numpy()
    ll, grad = _brute_loglik_grad(beta, X, t, e, "finegray")
    assert engine.loglik(cohort, beta, model="fine_gray", censoring_ties="finegray") == \
        pytest.approx(ll, rel=1e-12)
    np.testing.assert_allclose(engine.gradient(cohort, beta, model="fine_gray",
                                               censoring_ties="finegray"), grad, rtol=1e-10)
