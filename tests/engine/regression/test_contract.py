"""The contract every (likelihood, backend) pair of tests/support/contract.py meets, checked the same way
for each: the derivatives against the log-likelihood, case weights against the data, row order,
and the GPU backend against the CPU (on the CUDA emulator here, on a device where one is lent).
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import engine
from contract import CASES, away_from_zero, problem
from engine.regression.backends import devices

IDS = [c.name for c in CASES]


@pytest.fixture(params=CASES, ids=IDS)
def case(request):
    return request.param


def test_gradient_is_the_derivative_of_the_loglik(case):
    """dl/dbeta = central finite differences of l, coordinate by coordinate."""
    pr = problem(case)
    beta = away_from_zero(pr.p)
    g = pr.gradient(beta)
    h = 1e-5
    fd = np.empty(pr.p)
    for j in range(pr.p):
        e = np.zeros(pr.p)
        e[j] = h
        fd[j] = (pr.loglik(beta + e) - pr.loglik(beta - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7 * np.abs(g).max())


def test_coordinate_derivatives_equal_the_full_ones(case):
    """grad_hess(j) = (the gradient's j-th entry, the information's j-th diagonal)."""
    pr = problem(case)
    pr.set_beta(away_from_zero(pr.p))
    ll, g, info = pr.model.information(np.arange(pr.p))
    one = np.array([pr.model.grad_hess(j) for j in range(pr.p)])
    np.testing.assert_allclose(one[:, 0], g, rtol=1e-10, atol=1e-12 * np.abs(g).max())
    np.testing.assert_allclose(one[:, 1], np.diag(info), rtol=1e-10)
    np.testing.assert_allclose(ll, pr.loglik(), rtol=1e-13)
    for j in (0, pr.p - 1):     # the one-column information: grad_hess's pass (BackendModel)
        ll_j, g_j, info_j = pr.model.information([j])
        assert g_j.shape == (1,) and info_j.shape == (1, 1)
        np.testing.assert_allclose(ll_j, ll, rtol=1e-13)
        np.testing.assert_allclose(g_j[0], g[j], rtol=1e-10, atol=1e-12 * np.abs(g).max())
        np.testing.assert_allclose(info_j[0, 0], info[j, j], rtol=1e-10)


def _drop_mask(case, frame, seed=3):
    """Rows of a few random subjects."""
    rng = np.random.default_rng(seed)
    if case.subject is None:
        return np.isin(np.arange(len(frame)), rng.choice(len(frame), 7, replace=False))
    ids = frame[case.subject].unique()
    return frame[case.subject].isin(rng.choice(ids, 7, replace=False)).to_numpy()


def test_zero_weight_is_deleting_the_row(case):
    """Weight 0 on a subject's rows gives the log-likelihood and gradient of the data without
    them, at any beta, and the same fit."""
    frame = case.frame()
    drop = _drop_mask(case, frame)
    weighted = problem(case, frame)
    weighted.set_weights(np.where(drop, 0.0, 1.0))
    deleted = problem(case, frame[~drop].reset_index(drop=True))
    assert weighted.names == deleted.names
    beta = away_from_zero(weighted.p)
    np.testing.assert_allclose(weighted.loglik(beta), deleted.loglik(beta), rtol=1e-12)
    np.testing.assert_allclose(weighted.gradient(beta), deleted.gradient(beta), rtol=1e-10,
                               atol=1e-12)
    a = engine.fit_problem(weighted, None).coef
    b = engine.fit_problem(deleted, None).coef
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_row_order_does_not_matter(case):
    """Shuffled rows: the same log-likelihood, gradient and fit."""
    frame = case.frame()
    shuffled = frame.sample(frac=1.0, random_state=11).reset_index(drop=True)
    a, b = problem(case, frame), problem(case, shuffled)
    beta = away_from_zero(a.p)
    np.testing.assert_allclose(a.loglik(beta), b.loglik(beta), rtol=1e-12)
    np.testing.assert_allclose(a.gradient(beta), b.gradient(beta), rtol=1e-10, atol=1e-12)
    fa, fb = engine.fit_problem(a, None), engine.fit_problem(b, None)
    np.testing.assert_allclose(fa.coef, fb.coef, rtol=1e-8, atol=1e-10)


@pytest.fixture(scope="module")
def emulated_gpu():
    if shutil.which("g++") is None:
        pytest.fail("the CUDA emulator needs g++ (make test installs it)")
    from cuda_emulator.cupy_on_cpu import installed
    with installed():
        yield


GPU_CASES = [c for c in CASES if "gpu" in devices(c.options["model"])]


@pytest.mark.parametrize("case", GPU_CASES, ids=[c.name for c in GPU_CASES])
def test_gpu_equals_cpu(case, emulated_gpu):
    """The GPU backend (CUDA kernels on the emulator) gives the CPU's numbers to 1e-8."""
    cpu, gpu = problem(case), problem(case, backend="gpu")
    assert gpu.model.backend.name == "gpu"
    beta = away_from_zero(cpu.p)
    np.testing.assert_allclose(gpu.loglik(beta), cpu.loglik(beta), rtol=1e-10)
    np.testing.assert_allclose(gpu.gradient(beta), cpu.gradient(beta), rtol=1e-8, atol=1e-10)
    for j in range(cpu.p):
        np.testing.assert_allclose(gpu.model.grad_hess(j), cpu.model.grad_hess(j), rtol=1e-8,
                                   atol=1e-10)


def test_every_registered_likelihood_has_a_case():
    """A likelihood in the backend registry without a contract case is a gap."""
    from engine.regression.backends import REGISTRY

    assert {m for m, _ in REGISTRY} <= {c.options["model"] for c in CASES}
