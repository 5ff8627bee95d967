"""Fine-Gray regression: published mgus2 values, brute-force oracles (pseudo-likelihood,
gradient, crr weights, information, sandwich), Cox equivalence, penalties, errors, speed."""
import time

import numpy as np
import pytest

import engine
import fine_gray_oracles as O
from engine.regression.models.fine_gray import FineGrayModel


def _mgus2(covariates, drop_missing=False):
    df = engine.datasets.load_mgus2()
    df["etime"] = np.where(df.pstat == 1, df.ptime, df.futime)
    df["event"] = np.where(df.pstat == 1, 1, 2 * df.death)
    df["male"] = (df.sex == "M").astype(float)
    if drop_missing:
        df = df.dropna(subset=["mspike"])
    return engine.Cohort.from_frame(df, time="etime", event="event", covariates=covariates,
                                    competing_risks=True)


@pytest.mark.parametrize("cause, covariates, expected", [
    (1, ["male"], [-0.2290]),
    (2, ["male"], [0.23349]),
    (1, ["age", "male", "mspike"], [-0.017, -0.2136, 0.888]),
    (2, ["age", "male", "mspike"], [0.059, 0.369, -0.154]),
])
def test_mgus2_published_coefficients(cause, covariates, expected):
    cohort = _mgus2(covariates, drop_missing=len(covariates) > 1)
    res = engine.fit(cohort, model="fine_gray", cause=cause)
    assert res.converged
    np.testing.assert_allclose(res.coef.to_numpy(), expected, atol=2e-3)
    assert res.spec["cause"] == cause and res.spec["variance"] == "robust"
    assert np.all(np.isfinite(res.se)) and np.all(np.isfinite(res.se_model))
    assert list(res.summary["se"]) == list(res.se)


def _simulated(n=70, ties=True, strata=False, weights=False, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal(n), rng.random(n) < 0.4, rng.uniform(0, 3, n)])
    time_ = rng.integers(1, 15, n).astype(float) if ties else rng.exponential(5.0, n)
    code = rng.choice([0, 1, 2, 3], n, p=[0.3, 0.35, 0.25, 0.1])
    w = rng.uniform(0.3, 2.0, n) if weights else None
    s = rng.integers(0, 3, n) if strata else None
    cohort = engine.Cohort.from_arrays(time=time_, event=code, X=X, names=["a", "b", "c"],
                                       strata=s, weights=w, competing_risks=True)
    return cohort, (time_, code, X, w, s)


CASES = [dict(ties=False), dict(ties=True), dict(ties=True, strata=True),
         dict(ties=True, weights=True), dict(ties=True, strata=True, weights=True),
         dict(ties=False, strata=True, weights=True)]


def _oracle_args(raw, censoring_strata):
    time_, code, X, w, s = raw
    return time_, code, X, w, s, (s if censoring_strata else None)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("censoring_strata", [False, True])
def test_pseudo_likelihood_gradient_and_weights_match_brute_force(case, censoring_strata):
    cohort, raw = _simulated(**case)
    time_, code, X, w, s, cg = _oracle_args(raw, censoring_strata)
    beta = np.array([0.4, -0.3, 0.2])
    for cause in (1, 2):
        kw = dict(model="fine_gray", cause=cause, censoring_strata=censoring_strata)
        ll = engine.loglik(cohort, beta, **kw)
        g = engine.gradient(cohort, beta, **kw)
        assert ll == pytest.approx(O.loglik(time_, code, X, beta, cause, w, s, cg), rel=1e-10)
        np.testing.assert_allclose(g, O.gradient(time_, code, X, beta, cause, w, s, cg),
                                   rtol=1e-8, atol=1e-10)
        m = FineGrayModel(cohort, cause=cause, censoring_strata=censoring_strata)
        G = m.censoring_left_limits
        np.testing.assert_allclose(G, O.censoring_km_left(time_, code, w, cg), rtol=1e-12)
        # crr's weight of each competing row at each cause-k time, from the engine's G
        strata = np.zeros(len(time_), int) if s is None else s
        for i in np.flatnonzero(code == cause)[:8]:
            ref = O.risk_weights(time_[i], strata[i], time_, code, cause, w, s, cg)
            mine = np.where(strata != strata[i], 0.0,
                            np.where(time_ >= time_[i], 1.0,
                                     np.where((code > 0) & (code != cause), G[i] / G, 0.0)))
            np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", CASES[1:4])
def test_coordinate_scans_information_and_curvature_match_brute_force(case):
    cohort, raw = _simulated(**case)
    time_, code, X, w, s, cg = _oracle_args(raw, False)
    beta = np.array([-0.2, 0.5, 0.1])
    m = FineGrayModel(cohort, cause=1)
    m.set_beta(beta)
    g_ref = O.gradient(time_, code, X, beta, 1, w, s, cg)
    info_ref = O.information(time_, code, X, beta, 1, w, s, cg)
    for j in range(3):
        g, h = m.grad_hess(j)
        assert g == pytest.approx(g_ref[j], rel=1e-9, abs=1e-10)
        assert h == pytest.approx(info_ref[j, j], rel=1e-9)
    np.testing.assert_allclose(m.information(np.arange(3))[2], info_ref, rtol=1e-9, atol=1e-10)
    # the eta-space gradient and diagonal curvature (prox-Newton's quadratic model): with the
    # identity as design, the oracle's gradient and information are exactly those
    eta = X @ beta
    ident = np.eye(len(time_))
    ll, r, h = m.backend.risk_set_pass(2)
    order = m.data.order
    wev = np.where(m.data.flags & 1, m.data.weights, 0.0)
    np.testing.assert_allclose((wev - r), O.gradient(time_, code, ident, eta, 1, w, s)[order],
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(h, np.diag(O.information(time_, code, ident, eta, 1, w, s))[order],
                               rtol=1e-8, atol=1e-12)


def test_without_competing_events_fine_gray_is_breslow_cox():
    rng = np.random.default_rng(3)
    n = 300
    X = np.column_stack([rng.standard_normal(n), rng.random(n) < 0.3])
    time_ = rng.integers(1, 40, n).astype(float)
    event = (rng.random(n) < 0.6).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    s = rng.integers(0, 2, n)
    cohort = engine.Cohort.from_arrays(time=time_, event=event, X=X, names=["a", "b"],
                                       strata=s, weights=w)
    fg = engine.fit(cohort, model="fine_gray", cause=1)
    cox = engine.fit(cohort, model="cox", ties="breslow")
    np.testing.assert_allclose(fg.coef, cox.coef, rtol=1e-10, atol=1e-12)
    assert fg.loglik == pytest.approx(cox.loglik, rel=1e-12)
    np.testing.assert_allclose(fg.se_model, cox.se_model, rtol=1e-10)
    # no competing rows: crr's censoring term vanishes and its sandwich is Lin-Wei's (Breslow)
    np.testing.assert_allclose(fg.se, cox.se_robust, rtol=1e-8)
    beta = np.array([0.3, -0.7])
    assert engine.loglik(cohort, beta, model="fine_gray") == pytest.approx(
        engine.loglik(cohort, beta), rel=1e-12)
    np.testing.assert_allclose(engine.gradient(cohort, beta, model="fine_gray"),
                               engine.gradient(cohort, beta), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("censoring_strata", [False, True])
def test_sandwich_matches_fine_gray_formula(case, censoring_strata):
    cohort, raw = _simulated(**case, seed=5)
    time_, code, X, w, s, cg = _oracle_args(raw, censoring_strata)
    res = engine.fit(cohort, model="fine_gray", cause=1, censoring_strata=censoring_strata)
    beta = res.coef.to_numpy()
    info, middle, V = O.sandwich(time_, code, X, beta, 1, w, s, cg)
    np.testing.assert_allclose(res.se, np.sqrt(np.diag(V)), rtol=1e-8)
    np.testing.assert_allclose(res.se_model, np.sqrt(np.diag(np.linalg.inv(info))), rtol=1e-8)
    m_info, m_middle = res.problem.model.sandwich(np.arange(3))
    np.testing.assert_allclose(m_middle, middle, rtol=1e-8, atol=1e-12 * np.abs(middle).max())


@pytest.mark.parametrize("penalty", [engine.L1(2.0), engine.L2(5.0)])
@pytest.mark.parametrize("solver", ["auto", "ccd"])
def test_penalised_fit_meets_kkt_against_brute_force_gradient(penalty, solver):
    cohort, raw = _simulated(n=120, ties=True, strata=True, weights=True, seed=2)
    time_, code, X, w, s, cg = _oracle_args(raw, False)
    res = engine.fit(cohort, model="fine_gray", cause=1, penalty=penalty, solver=solver,
                     tol=1e-12)
    beta = res.coef.to_numpy()
    g = O.gradient(time_, code, X, beta, 1, w, s, cg)
    if isinstance(penalty, engine.L1):
        lam = penalty.l1
        nz = beta != 0
        np.testing.assert_allclose(g[nz], lam * np.sign(beta[nz]), atol=1e-6)
        assert np.all(np.abs(g[~nz]) <= lam + 1e-6)
    else:
        np.testing.assert_allclose(g, penalty.l2 * beta, atol=1e-6)
    assert res.se.isna().all()


def test_unpenalised_solvers_agree():
    cohort, _ = _simulated(n=150, strata=True, weights=True, seed=4)
    fits = [engine.fit(cohort, model="fine_gray", cause=2, solver=sv, tol=1e-12)
            for sv in ("auto", "ccd", "newton", "prox_newton")]
    for f in fits[1:]:
        np.testing.assert_allclose(f.coef, fits[0].coef, atol=1e-7)


def test_errors_are_clear():
    cohort = _mgus2(["male"])
    with pytest.raises(engine.CohortError, match="cause=3"):
        engine.fit(cohort, model="fine_gray", cause=3)
    with pytest.raises(ValueError, match="Breslow"):
        engine.fit(cohort, model="fine_gray", cause=1, ties="efron")
    with pytest.raises(engine.CohortError, match="fine_gray"):
        engine.fit(cohort, model="cox")
    with pytest.raises(ValueError, match="cut_points"):
        engine.fit(cohort, model="fine_gray", cause=1, cut_points={"male": [10.0]})


def test_sandwich_is_fast_at_n10000_p10():
    rng = np.random.default_rng(0)
    n, p = 10_000, 10
    X = rng.standard_normal((n, p))
    code = rng.choice([0, 1, 2], n, p=[0.3, 0.4, 0.3])
    cohort = engine.Cohort.from_arrays(time=rng.exponential(1.0, n), event=code, X=X,
                                       names=[f"x{j}" for j in range(p)], competing_risks=True)
    res = engine.fit(cohort, model="fine_gray", cause=1)
    res.problem.model.sandwich(np.arange(p))           # compiled
    t0 = time.perf_counter()
    se = res.se
    assert time.perf_counter() - t0 < 1.0
    assert np.all(np.isfinite(se))
