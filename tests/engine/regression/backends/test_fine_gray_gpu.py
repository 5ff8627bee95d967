"""The Fine-Gray GPU backend = the CPU backend (float64, 1e-8 relative), per method and per
fit, with ties, strata, case weights (zeros: the censoring weights re-estimated) and per-stratum
censoring, on a CUDA device (marked gpu) and everywhere on the CPU emulator of
tests/support/cuda_emulator; its log pseudo-likelihood also matches the brute-force definition of
tests/support/fine_gray_oracles.py."""
from __future__ import annotations


import numpy as np
import pytest

import engine
import fine_gray_oracles as O
from engine.regression.models.fine_gray import FineGrayModel

RTOL = 1e-8


def _simulated(n=90, ties=True, strata=False, weights=False, seed=0):
    """As tests/engine/regression/models/test_fine_gray.py: causes 1-3 and censoring, a binary column."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal(n), rng.random(n) < 0.4, rng.uniform(0, 3, n)])
    time_ = rng.integers(1, 15, n).astype(float) if ties else rng.exponential(5.0, n)
    code = rng.choice([0, 1, 2, 3], n, p=[0.3, 0.35, 0.25, 0.1])
    w = rng.uniform(0.3, 2.0, n) if weights else None
    s = rng.integers(0, 3, n) if strata else None
    cohort = engine.Cohort.from_arrays(time=time_, event=code, X=X, names=["a", "b", "c"],
                                       strata=s, weights=w, competing_risks=True)
    return cohort, (time_, code, X, w, s)


CASES = [dict(ties=False), dict(ties=True, strata=True, weights=True),
         dict(n=1500, ties=True, strata=True)]           # 1,500 rows: two scan tiles


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)


@pytest.mark.parametrize("censoring_strata", [False, True])
@pytest.mark.parametrize("case", CASES, ids=["no ties", "strata weights", "tiles"])
def test_methods_equal_cpu(where, case, censoring_strata):
    if censoring_strata and not case.get("strata"):
        pytest.skip("per-stratum censoring needs strata")
    cohort, raw = _simulated(**case)
    cpu, gpu = (FineGrayModel(cohort, 1, b, censoring_strata) for b in ("cpu", "gpu"))
    assert gpu.backend.name == "gpu"
    p = cpu.p
    rng = np.random.default_rng(1)
    for beta in (np.zeros(p), rng.normal(0, 0.3, p)):
        for m in (cpu, gpu):
            m.backend.set_beta(beta)
        assert gpu.backend.loglik() == pytest.approx(cpu.backend.loglik(), rel=RTOL)
        for a, b in zip(gpu.backend.loglik_gradient(), cpu.backend.loglik_gradient()):
            _close(a, b)
        for j in range(p):
            _close(gpu.backend.grad_hess(j), cpu.backend.grad_hess(j))
    if cohort.n <= 200:                                          # the oracle is O(N^2)
        time_, code, X, w, s = raw
        oracle = O.loglik(time_, code, X, beta, 1, w, s, s if censoring_strata else None)
        assert gpu.backend.loglik() == pytest.approx(oracle, rel=1e-10)
    for j, delta in [(0, 0.3), (p - 1, -0.7), (1, 60.0), (1, -60.0)]:  # 60: a re-centring
        for m in (cpu, gpu):
            m.backend.update(j, delta)
        _close(gpu.backend.grad_hess(j), cpu.backend.grad_hess(j))
        assert gpu.backend.loglik() == pytest.approx(cpu.backend.loglik(), rel=RTOL)
    wts = rng.integers(0, 3, cohort.n).astype(float)            # zeros: rows left out
    for m in (cpu, gpu):
        m.set_weights(wts)
    _close(gpu.censoring_left_limits, cpu.censoring_left_limits)
    cols = np.arange(p)
    for a, b in zip(gpu.backend.information(cols), cpu.backend.information(cols)):
        _close(a, b)
    for a, b in zip(gpu.sandwich(cols), cpu.sandwich(cols)):
        _close(a, b)
    lam = np.full(p, 0.5)
    step_g = gpu.backend.quadratic_step(cols, np.zeros(p), lam, lam, 1e-12, 100)
    step_c = cpu.backend.quadratic_step(cols, np.zeros(p), lam, lam, 1e-12, 100)
    for a, b in zip(step_g, step_c):
        _close(a, b)


@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("penalty", [None, engine.L1(2.0), engine.L2(4.0)],
                         ids=["none", "L1", "L2"])
def test_fits_equal_cpu(where, solver, penalty):
    cohort, _ = _simulated(n=150, ties=True, strata=True, weights=True, seed=4)
    kw = dict(model="fine_gray", cause=1, penalty=penalty, solver=solver, tol=1e-12)
    cpu = engine.fit(cohort, **kw)
    gpu = engine.fit(cohort, backend="gpu", **kw)
    assert gpu.spec["backend"] == "gpu"
    np.testing.assert_allclose(gpu.coef.to_numpy(), cpu.coef.to_numpy(), rtol=RTOL, atol=1e-10)
    assert gpu.loglik == pytest.approx(cpu.loglik, rel=RTOL)
    if penalty is None:
        np.testing.assert_allclose(gpu.se.to_numpy(), cpu.se.to_numpy(), rtol=RTOL)


def test_thread_orders_give_one_result(where):
    """The scans read shared memory only across barriers: the emulator's three thread orders
    (forward, reverse, interleaved) give identical numbers; a race would lose or double terms."""
    if where != "emulator":
        pytest.skip("thread orders are the emulator's")
    from cuda_emulator import SCHEDULES, schedule
    cohort, _ = _simulated(n=1500, strata=True, weights=True)
    results = []
    for name in SCHEDULES:
        with schedule(name):
            m = FineGrayModel(cohort, 1, "gpu")
            m.backend.set_beta(np.array([0.2, -0.3, 0.1]))
            gh = [m.backend.grad_hess(j) for j in range(m.p)]
            ll, g = m.backend.loglik_gradient()
            _, r, h = m.backend.risk_set_pass(2)
            results.append(np.concatenate([np.ravel(gh), g, [ll], r.get(), h.get()]))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_cross_validation_and_bootstrap_equal_cpu(where):
    """Fold weights (zeros: G re-estimated), warm starts and bootstrap counts."""
    cohort, _ = _simulated(n=150, ties=True, strata=True, weights=True, seed=4)
    cvs = [engine.cross_validate(cohort, model="fine_gray", folds=3, grid=4, seed=1, backend=b)
           for b in ("cpu", "gpu")]
    assert cvs[1].fit.spec["backend"] == "gpu"
    np.testing.assert_allclose(cvs[1].curve.to_numpy(float), cvs[0].curve.to_numpy(float),
                               rtol=RTOL)
    boots = [engine.bootstrap(cohort, model="fine_gray", replicates=3, seed=2, backend=b)
             for b in ("cpu", "gpu")]
    np.testing.assert_allclose(boots[1].replicates, boots[0].replicates, rtol=RTOL, atol=1e-10)
