"""Logistic regression (engine.fit(model="logistic")): unpenalised fits against statsmodels
Logit, L1 fits against scikit-learn's saga (which leaves the intercept unpenalised, as we do),
every solver, case weights, and cross-validation of the penalty."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import statsmodels.api as sm
from sklearn.linear_model import LogisticRegression

import engine

SOLVERS = ["auto", "ccd", "newton", "prox_newton"]


def _data(n=600, p=8, seed=1, sparse=False):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, p, density=0.15, random_state=seed, data_rvs=np.ones).toarray()
    else:
        X = rng.normal(size=(n, p))
        X[:, 3] = rng.random(n) < 0.2
        X[:, 5] = 40 + 10 * X[:, 5]           # uncentred, as age is
    eta = -0.5 + (X - X.mean(0)) @ (0.4 * rng.normal(size=p))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    return X, y


def _cohort(X, y, weights=None):
    return engine.Cohort.from_arrays(time=np.ones(len(y)), event=y, X=X, weights=weights)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", SOLVERS)
def test_unpenalised_matches_statsmodels_logit(solver, sparse):
    X, y = _data(sparse=sparse)
    res = engine.fit(_cohort(X, y), model="logistic", solver=solver, tol=1e-12, max_iter=5000)
    ref = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-12)
    assert res.coef.index[0] == "(intercept)"
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse, rtol=1e-6)
    assert res.loglik == pytest.approx(ref.llf, rel=1e-10)


@pytest.mark.parametrize("lam", [2.0, 5.0, 10.0])
@pytest.mark.parametrize("solver", ["auto", "ccd", "prox_newton"])
def test_l1_matches_sklearn_saga(solver, lam):
    """saga minimises C * sum(log loss) + ||w||_1 with the intercept unpenalised: C = 1/lam."""
    X, y = _data(sparse=True, p=12)
    res = engine.fit(_cohort(X, y), model="logistic", penalty=engine.L1(lam), solver=solver,
                     tol=1e-13, max_iter=10000)
    ref = LogisticRegression(l1_ratio=1.0, C=1.0 / lam, solver="saga", tol=1e-13,
                             max_iter=200000).fit(X, y)
    expected = np.r_[ref.intercept_, ref.coef_.ravel()]
    np.testing.assert_allclose(res.coef.to_numpy(), expected, atol=1e-5)
    assert not res.penalized["(intercept)"] and res.penalized.drop("(intercept)").all()


def test_intercept_is_never_penalised():
    X, y = _data()
    res = engine.fit(_cohort(X, y), model="logistic", penalty=engine.L1(1e6))
    assert (res.coef.drop("(intercept)") == 0).all()
    assert res.coef["(intercept)"] == pytest.approx(np.log(y.mean() / (1 - y.mean())), rel=1e-8)


def test_case_weights_equal_repeated_rows():
    X, y = _data(n=300)
    w = np.random.default_rng(3).integers(0, 4, size=y.size).astype(float)
    weighted = engine.fit(_cohort(X, y, weights=w), model="logistic", tol=1e-12)
    rows = np.repeat(np.arange(y.size), w.astype(int))
    repeated = engine.fit(_cohort(X[rows], y[rows]), model="logistic", tol=1e-12)
    np.testing.assert_allclose(weighted.coef, repeated.coef, atol=1e-8)
    assert weighted.loglik == pytest.approx(repeated.loglik, rel=1e-10)


def test_cross_validate_logistic_scores_held_out_loglik():
    X, y = _data(n=400, p=30, sparse=True)
    cohort = _cohort(X, y)
    cv = engine.cross_validate(cohort, model="logistic", folds=4, grid=5, seed=2)
    assert cv.spec["model"] == "logistic" and cv.fit.spec["model"] == "logistic"
    assert cv.penalty.lam in set(cv.curve["lambda"])
    # the fold score of the largest lambda equals the held-out log-likelihood at that fit
    from engine.regression.drivers.resampling import fold_of_rows

    lam = cv.curve["lambda"].iloc[0]
    fold = fold_of_rows(cohort, 4, 2, 0)
    train = engine.fit(_cohort(X, y, weights=(fold != 0).astype(float)), model="logistic",
                       penalty=engine.L1(lam), tol=1e-8)
    held = engine.loglik(_cohort(X, y, weights=(fold == 0).astype(float)),
                         train.coef.to_numpy(), model="logistic")
    assert cv.curve["r0_f0"].iloc[0] == pytest.approx(held, rel=1e-6)


def test_bad_response_is_named():
    X, y = _data(n=50)
    with pytest.raises(engine.CohortError, match="0/1"):
        engine.fit(_cohort(X, 2 * y), model="logistic")
    with pytest.raises(engine.CohortError, match="both 0s and 1s"):
        engine.fit(_cohort(X, np.ones_like(y)), model="logistic")
    strata = engine.Cohort.from_arrays(time=np.ones(y.size), event=y, X=X, strata=y % 2)
    with pytest.raises(engine.CohortError, match="strata"):
        engine.fit(strata, model="logistic")
