"""The logistic GPU backend = the CPU backend (float64, 1e-8 relative), per kernel and per fit,
on a CUDA device (marked gpu) and everywhere on the CPU emulator of tests/support/cuda_emulator; its
unpenalised fit also matches statsmodels' Logit.  (The source's nvcc compile and block fit:
tests/engine/regression/backends/test_gpu_kernels_compile.py.)"""
from __future__ import annotations


import numpy as np
import pytest
import scipy.sparse as sp
import statsmodels.api as sm

import engine
from engine.regression.backends import logistic_gpu
from engine.regression.backends.logistic_cpu import LogisticCpuBackend

RTOL = 1e-8
def _data(n=700, p=8, seed=1, sparse=False):
    """As tests/engine/regression/models/test_logistic.py: a dense design with a binary and an uncentred column, or a
    sparse 0/1 one; y drawn from the logistic model."""
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, p, density=0.15, random_state=seed, data_rvs=np.ones).toarray()
    else:
        X = rng.normal(size=(n, p))
        X[:, 3] = rng.random(n) < 0.2
        X[:, 5] = 40 + 10 * X[:, 5]
    eta = -0.5 + (X - X.mean(0)) @ (0.4 * rng.normal(size=p))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    return X, y


def _cohort(X, y):
    return engine.Cohort.from_arrays(time=np.ones(len(y)), event=y, X=X)


def _pair(X, y):
    """Both backends over the design with its intercept column (as LogisticModel builds it)."""
    n = len(y)
    A = sp.hstack([sp.csc_matrix(np.ones((n, 1))), sp.csc_matrix(X)], format="csc")
    A.sort_indices()
    args = (A, y.astype(float), np.ones(n))
    return LogisticCpuBackend(*args), logistic_gpu.LogisticGpuBackend(*args)


@pytest.mark.parametrize("sparse", [False, True])
def test_kernels_equal_cpu(where, sparse):
    X, y = _data(sparse=sparse)
    cpu, gpu = _pair(X, y)
    p = cpu.X.shape[1]
    rng = np.random.default_rng(1)
    for beta in (np.zeros(p), rng.normal(0, 0.05, p)):
        cpu.set_beta(beta)
        gpu.set_beta(beta)
        np.testing.assert_allclose(gpu.eta, cpu.eta, rtol=1e-13, atol=1e-14)
        assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
        ll_c, g_c = cpu.loglik_gradient()
        ll_g, g_g = gpu.loglik_gradient()
        assert ll_g == pytest.approx(ll_c, rel=RTOL)
        np.testing.assert_allclose(g_g, g_c, rtol=RTOL, atol=1e-10)
        for j in range(p):
            np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-10)
    for j, delta in [(0, 0.3), (p - 1, -0.7), (1, 40.0), (0, -0.1)]:   # 40: p near 0 and 1
        cpu.update(j, delta)
        gpu.update(j, delta)
        np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-10)
        assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    w = rng.integers(0, 3, len(y)).astype(float)                       # a bootstrap's counts
    cpu.set_weights(w)
    gpu.set_weights(w)
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    cols = np.arange(p)
    for a, b in zip(gpu.information(cols), cpu.information(cols)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)
    lam = np.full(p, 0.5)
    lam[0] = 0.0
    for coords in (cols, cols[1:]):
        step_g = gpu.quadratic_step(coords, np.zeros(p), lam, lam, 1e-12, 100)
        step_c = cpu.quadratic_step(coords, np.zeros(p), lam, lam, 1e-12, 100)
        for a, b in zip(step_g, step_c):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)


@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("penalty", [None, engine.L1(3.0), engine.L2(5.0)],
                         ids=["none", "L1", "L2"])
def test_fits_equal_cpu(where, solver, penalty):
    X, y = _data(sparse=penalty is not None or solver == "ccd", p=10)   # ccd: few cycles
    cohort = _cohort(X, y)
    kw = dict(model="logistic", penalty=penalty, solver=solver, tol=1e-12, max_iter=5000)
    cpu = engine.fit(cohort, **kw)
    gpu = engine.fit(cohort, backend="gpu", **kw)
    assert gpu.spec["backend"] == "gpu"
    np.testing.assert_allclose(gpu.coef.to_numpy(), cpu.coef.to_numpy(), rtol=RTOL, atol=1e-10)
    assert gpu.loglik == pytest.approx(cpu.loglik, rel=RTOL)
    if penalty is None:
        np.testing.assert_allclose(gpu.se.to_numpy(), cpu.se.to_numpy(), rtol=RTOL)
        ref = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-12)
        np.testing.assert_allclose(gpu.coef.to_numpy(), ref.params, rtol=1e-6, atol=1e-6)
        assert gpu.loglik == pytest.approx(ref.llf, rel=1e-10)


def test_linear_predictor_comes_back_to_the_host(where):
    X, y = _data()
    model = engine.Problem.from_cohort(_cohort(X, y), engine.FitOptions(
        model="logistic", backend="gpu")).model
    beta = np.linspace(-0.2, 0.2, model.p)
    model.set_beta(beta)
    eta = model.linear_predictor()
    assert isinstance(eta, np.ndarray)
    np.testing.assert_allclose(eta, beta[0] + X @ beta[1:], rtol=1e-12, atol=1e-12)


def test_thread_orders_give_one_result(where):
    """The block sums read shared memory only across barriers and each update touches distinct
    rows: the emulator's three thread orders (forward, reverse, interleaved) give identical
    numbers; a race would lose or double whole terms."""
    if where != "emulator":
        pytest.skip("thread orders are the emulator's")
    from cuda_emulator import SCHEDULES, schedule
    X, y = _data(n=1500, sparse=True)
    results = []
    for name in SCHEDULES:
        _, gpu = _pair(X, y)
        with schedule(name):
            gpu.set_beta(np.linspace(-0.5, 0.5, gpu.X.shape[1]))
            gpu.update(2, 0.25)
            gh = [gpu.grad_hess(j) for j in range(gpu.X.shape[1])]
            ll, g = gpu.loglik_gradient()
            results.append(np.concatenate([np.ravel(gh), g, [ll], gpu.eta]))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_cross_validation_and_bootstrap_equal_cpu(where):
    """Fold weights (zeros), warm starts and bootstrap counts through set_weights."""
    X, y = _data(sparse=True, p=10)
    cohort = _cohort(X, y)
    cvs = [engine.cross_validate(cohort, model="logistic", folds=3, grid=4, seed=1, backend=b)
           for b in ("cpu", "gpu")]
    assert cvs[1].fit.spec["backend"] == "gpu"
    np.testing.assert_allclose(cvs[1].curve.to_numpy(float), cvs[0].curve.to_numpy(float),
                               rtol=RTOL)
    boots = [engine.bootstrap(cohort, model="logistic", replicates=3, seed=2, backend=b)
             for b in ("cpu", "gpu")]
    np.testing.assert_allclose(boots[1].replicates, boots[0].replicates, rtol=RTOL, atol=1e-10)
