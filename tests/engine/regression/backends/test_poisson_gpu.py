"""The Poisson GPU backend = the CPU backend (float64, 1e-8 relative), per kernel and per fit,
on a CUDA device (marked gpu) and everywhere on the CPU emulator of tests/support/cuda_emulator;
its unpenalised fit also matches statsmodels' Poisson GLM with the person-time offset.  (The
source's nvcc compile: tests/engine/regression/backends/test_gpu_kernels_compile.py.)"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import statsmodels.api as sm

import engine
from engine.regression.backends import poisson_gpu
from engine.regression.backends.poisson_cpu import PoissonCpuBackend

RTOL = 1e-8


def _data(n=700, p=8, seed=1, sparse=False):
    """A dense design with a binary and an uncentred column, or a sparse 0/1 one; person-time
    uniform on (0.5, 3) and an event of rate exp(eta) in it (at most one a row)."""
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, p, density=0.15, random_state=seed, data_rvs=np.ones).toarray()
    else:
        X = rng.normal(size=(n, p))
        X[:, 3] = rng.random(n) < 0.2
        X[:, 5] = 40 + 10 * X[:, 5]
    eta = -1.0 + (X - X.mean(0)) @ (0.3 * rng.normal(size=p))
    t = rng.uniform(0.5, 3.0, n)
    y = (rng.random(n) < 1 - np.exp(-t * np.exp(eta))).astype(int)
    return X, y, t


def _pair(X, y, t):
    """Both backends over the design with its intercept column (as PoissonModel builds it)."""
    n = len(y)
    A = sp.hstack([sp.csc_matrix(np.ones((n, 1))), sp.csc_matrix(X)], format="csc")
    A.sort_indices()
    args = (A, y.astype(float), np.ones(n), t)
    return PoissonCpuBackend(*args), poisson_gpu.PoissonGpuBackend(*args)


@pytest.mark.parametrize("sparse", [False, True])
def test_kernels_equal_cpu(where, sparse):
    X, y, t = _data(sparse=sparse)
    cpu, gpu = _pair(X, y, t)
    p = cpu.X.shape[1]
    rng = np.random.default_rng(1)
    for beta in (np.zeros(p), rng.normal(0, 0.02, p)):
        cpu.set_beta(beta)
        gpu.set_beta(beta)
        np.testing.assert_allclose(gpu.eta, cpu.eta, rtol=1e-13, atol=1e-14)
        ll_c, g_c = cpu.loglik_gradient()
        ll_g, g_g = gpu.loglik_gradient()
        assert ll_g == pytest.approx(ll_c, rel=RTOL)
        np.testing.assert_allclose(g_g, g_c, rtol=RTOL, atol=1e-10)
        for j in range(p):
            np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-10)
    for j, delta in [(0, 0.3), (p - 1, -0.7), (1, 2.0), (0, -0.1)]:
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


@pytest.mark.parametrize("penalty", [None, engine.L1(3.0)], ids=["none", "L1"])
def test_fits_equal_cpu(where, penalty):
    X, y, t = _data(sparse=penalty is not None, p=10)
    cohort = engine.Cohort.from_arrays(time=t, event=y, X=X)
    kw = dict(model="poisson", penalty=penalty, tol=1e-12, max_iter=5000)
    cpu = engine.fit(cohort, **kw)
    gpu = engine.fit(cohort, backend="gpu", **kw)
    assert gpu.spec["backend"] == "gpu"
    np.testing.assert_allclose(gpu.coef.to_numpy(), cpu.coef.to_numpy(), rtol=RTOL, atol=1e-10)
    assert gpu.loglik == pytest.approx(cpu.loglik, rel=RTOL)
    if penalty is None:
        np.testing.assert_allclose(gpu.se.to_numpy(), cpu.se.to_numpy(), rtol=RTOL)
        ref = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson(), exposure=t).fit(
            tol=1e-13)
        np.testing.assert_allclose(gpu.coef.to_numpy(), ref.params, rtol=1e-6, atol=1e-7)
        assert gpu.loglik == pytest.approx(ref.llf, rel=1e-10)


def test_thread_orders_give_one_result(where):
    """The Poisson kernels in the emulator's three thread orders give identical numbers."""
    if where != "emulator":
        pytest.skip("thread orders are the emulator's")
    from cuda_emulator import SCHEDULES, schedule
    X, y, t = _data(n=1500, sparse=True)
    results = []
    for name in SCHEDULES:
        _, gpu = _pair(X, y, t)
        with schedule(name):
            gpu.set_beta(np.linspace(-0.5, 0.5, gpu.X.shape[1]))
            gpu.update(2, 0.25)
            ll, g = gpu.loglik_gradient()
            results.append(np.concatenate([g, [ll], gpu.eta]))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])
