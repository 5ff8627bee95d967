"""Penalised Cox fits (L1 / L2) of engine/ against optimality conditions and other solvers.

Convention (design.md): L1(lam) minimises -l(beta) + lam * sum|beta_j|, L2(lam) minimises
-l(beta) + lam/2 * sum beta_j^2, l the summed log partial likelihood, over the penalised
coefficients. KKT is checked with the brute-force oracle gradient (tests/support/oracles.py);
L1 (Breslow) is compared with scikit-survival's CoxnetSurvivalAnalysis (alpha = lam / N);
L2 with scipy.optimize.minimize on the brute-force objective.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

import oracles as O

engine = pytest.importorskip("engine")

NAMES = [f"x{j}" for j in range(8)]


@functools.lru_cache(maxsize=None)
def data(n=300, seed=21):
    """Continuous and binary covariates, a few true zeros, integer-ish times (some ties)."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 5)), rng.integers(0, 2, (n, 3))]
    beta = np.array([0.8, -0.6, 0.0, 0.3, 0.0, -0.7, 0.5, 0.0])
    eta = X @ beta
    t_ev = rng.exponential(1.0 / np.exp(eta))
    t_c = rng.exponential(1.5, n)
    time = np.ceil(np.minimum(t_ev, t_c) * 30)
    event = (t_ev <= t_c).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    strata = rng.integers(0, 3, n)
    return time, event, X, w, strata


def cohort(weights=False, strata=False):
    time, event, X, w, g = data()
    return engine.Cohort.from_arrays(time=time, event=event, X=X, names=NAMES,
                                     strata=g if strata else None, weights=w if weights else None)


def oracle_args(weights=False, strata=False):
    time, event, X, w, g = data()
    return time, event, X, (w if weights else None), (g if strata else None)


def coef(res):
    s = pd.Series(res.coef)
    return s.reindex(NAMES).to_numpy(float)


def restricted_unpenalized_fit(ties, unpen_mask, weights=False, strata=False):
    """Optimum over the unpenalised coordinates with the penalised ones held at 0 (oracle Newton)."""
    time, event, X, w, g = oracle_args(weights, strata)
    b = np.zeros(X.shape[1])
    idx = np.flatnonzero(unpen_mask)
    for _ in range(100):
        if idx.size == 0:
            break
        gr = O.cox_gradient(time, event, X, b, w, g, ties)[idx]
        H = O.cox_hessian(time, event, X, b, w, g, ties)[np.ix_(idx, idx)]
        step = np.linalg.solve(H, gr)
        b[idx] -= step
        if np.max(np.abs(step)) < 1e-14:
            break
    return b


def lambda_max(ties, unpen_mask, weights=False, strata=False):
    time, event, X, w, g = oracle_args(weights, strata)
    b0 = restricted_unpenalized_fit(ties, unpen_mask, weights, strata)
    return O.lambda_max_l1(O.cox_gradient(time, event, X, b0, w, g, ties), ~unpen_mask), b0


def check_kkt_and_outputs(res, lam, kind, ties, unpen_mask, weights=False, strata=False):
    time, event, X, w, g = oracle_args(weights, strata)
    b = coef(res)
    assert np.all(np.isfinite(b)), b
    grad = O.cox_gradient(time, event, X, b, w, g, ties)
    O.assert_kkt(grad, b, lam, kind, penalized=~unpen_mask, rel=1e-6, names=NAMES)
    # loglik reported without the penalty
    np.testing.assert_allclose(float(res.loglik), O.cox_loglik(time, event, X, b, w, g, ties), rtol=1e-9)
    se = pd.Series(res.se).reindex(NAMES).to_numpy(float)
    assert np.all(np.isnan(se[~unpen_mask])), f"se of penalised coefs must be NaN, got {se}"
    assert res.converged
    return b


def sksurv_l1(lam, unpen_mask):
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.util import Surv

    time, event, X, _, _ = data()
    n, p = X.shape
    pf = (~unpen_mask).astype(float)
    # sksurv rescales penalty_factor to sum to p; undo that so each penalised coef gets lam/N
    alpha = lam / n * pf.sum() / p
    m = CoxnetSurvivalAnalysis(l1_ratio=1.0, alphas=[alpha], normalize=False, tol=1e-12,
                               max_iter=1_000_000, fit_baseline_model=False,
                               penalty_factor=None if unpen_mask.sum() == 0 else pf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(X, Surv.from_arrays(event=event.astype(bool), time=time))
    return m.coef_[:, 0]


def l2_reference(lam, ties, unpen_mask, weights=False, strata=False):
    time, event, X, w, g = oracle_args(weights, strata)
    pen = (~unpen_mask).astype(float)

    def f(b):
        return -O.cox_loglik(time, event, X, b, w, g, ties) + 0.5 * lam * np.sum(pen * b * b)

    def jac(b):
        return -O.cox_gradient(time, event, X, b, w, g, ties) + lam * pen * b

    def hess(b):
        return -O.cox_hessian(time, event, X, b, w, g, ties) + lam * np.diag(pen)

    r = optimize.minimize(f, np.zeros(X.shape[1]), jac=jac, hess=hess, method="trust-exact",
                          options=dict(gtol=1e-9, maxiter=1000))
    x = r.x
    for _ in range(3):  # polish: exact Newton steps on the same (strictly convex) objective
        x = x - np.linalg.solve(hess(x), jac(x))
    assert np.max(np.abs(jac(x))) < 1e-8, (r, jac(x))
    return x


NO_UNPEN = np.zeros(8, bool)
UNPEN_01 = np.array([True, True] + [False] * 6)


# ---------------------------------------------------------------------------------------
# L1
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("frac", [0.5, 0.1, 0.01])
def test_l1_kkt(frac, ties, solver):
    lmax, _ = lambda_max(ties, NO_UNPEN)
    lam = frac * lmax
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(lam), solver=solver)
    b = check_kkt_and_outputs(res, lam, "l1", ties, NO_UNPEN)
    if frac == 0.5:
        assert np.any(b == 0.0), f"expected exact zeros at lam = lambda_max/2, got {b}"


@pytest.mark.parametrize("frac", [0.5, 0.1, 0.01])
def test_l1_vs_sksurv_coxnet(frac):
    lmax, _ = lambda_max("breslow", NO_UNPEN)
    lam = frac * lmax
    ref = sksurv_l1(lam, NO_UNPEN)
    # sanity of the reference: Coxnet stops at ~1e-5 relative KKT accuracy, so check it loosely
    time, event, X, _, _ = data()
    O.assert_kkt(O.cox_gradient(time, event, X, ref, ties="breslow"), ref, lam, "l1", rel=1e-3)
    res = engine.fit(cohort(), model="cox", ties="breslow", penalty=engine.L1(lam))
    np.testing.assert_allclose(coef(res), ref, rtol=1e-5, atol=1e-5, err_msg="vs sksurv Coxnet")


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_l1_unpenalized_respected(ties):
    lmax, b0 = lambda_max(ties, UNPEN_01)
    lam = 0.3 * lmax
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(lam), unpenalized=("x0", "x1"))
    b = check_kkt_and_outputs(res, lam, "l1", ties, UNPEN_01)
    assert np.all(b[:2] != 0.0)
    se = pd.Series(res.se).reindex(NAMES).to_numpy(float)
    assert np.all(np.isfinite(se[:2]) | np.isnan(se[:2]))  # unpenalised se: defined or NaN, never garbage
    if ties == "breslow":
        ref = sksurv_l1(lam, UNPEN_01)
        np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5, err_msg="vs sksurv Coxnet (penalty_factor)")


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_l1_above_lambda_max_gives_zeros(ties):
    lmax, _ = lambda_max(ties, NO_UNPEN)
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(1.001 * lmax))
    assert np.all(coef(res) == 0.0), coef(res)
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(10 * lmax))
    assert np.all(coef(res) == 0.0), coef(res)
    # just below lambda_max, exactly one coefficient leaves zero
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(0.999 * lmax))
    assert np.sum(coef(res) != 0.0) == 1, coef(res)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_l1_above_lambda_max_with_unpenalized(ties):
    lmax, b0 = lambda_max(ties, UNPEN_01)
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L1(1.001 * lmax), unpenalized=["x0", "x1"])
    b = coef(res)
    assert np.all(b[2:] == 0.0), b
    np.testing.assert_allclose(b[:2], b0[:2], rtol=1e-6, err_msg="unpenalised coefs = restricted MLE")


@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("case", [dict(weights=True), dict(strata=True), dict(weights=True, strata=True)])
def test_l1_kkt_weights_strata(ties, case):
    lmax, _ = lambda_max(ties, NO_UNPEN, **case)
    lam = 0.2 * lmax
    res = engine.fit(cohort(**case), model="cox", ties=ties, penalty=engine.L1(lam))
    check_kkt_and_outputs(res, lam, "l1", ties, NO_UNPEN, **case)


# ---------------------------------------------------------------------------------------
# L2
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["auto", "ccd", "newton"])
@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("lam", [0.5, 20.0, 500.0])
def test_l2_kkt_and_scipy(lam, ties, solver):
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L2(lam), solver=solver)
    b = check_kkt_and_outputs(res, lam, "l2", ties, NO_UNPEN)
    np.testing.assert_allclose(b, l2_reference(lam, ties, NO_UNPEN), rtol=1e-6, atol=1e-9,
                               err_msg="vs scipy.optimize.minimize on the brute-force objective")


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_l2_unpenalized_respected(ties):
    lam = 200.0
    res = engine.fit(cohort(), model="cox", ties=ties, penalty=engine.L2(lam), unpenalized=("x0", "x1"))
    b = check_kkt_and_outputs(res, lam, "l2", ties, UNPEN_01)
    np.testing.assert_allclose(b, l2_reference(lam, ties, UNPEN_01), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_l2_weights_strata(ties):
    lam = 5.0
    res = engine.fit(cohort(weights=True, strata=True), model="cox", ties=ties, penalty=engine.L2(lam))
    b = check_kkt_and_outputs(res, lam, "l2", ties, NO_UNPEN, weights=True, strata=True)
    np.testing.assert_allclose(b, l2_reference(lam, ties, NO_UNPEN, weights=True, strata=True),
                               rtol=1e-6, atol=1e-9)


def test_tiny_penalty_approaches_mle():
    time, event, X, _, _ = data()
    res0 = engine.fit(cohort(), model="cox", ties="breslow")
    res = engine.fit(cohort(), model="cox", ties="breslow", penalty=engine.L2(1e-10))
    np.testing.assert_allclose(coef(res), coef(res0), rtol=1e-6, atol=1e-9)
