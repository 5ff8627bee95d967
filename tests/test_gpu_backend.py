"""GPU backend = CPU backend (float64: 1e-8 relative), per kernel and per fit.

Marked ``gpu``: skipped, with the reason, where CuPy or a CUDA device is missing (everywhere
this project's CI has run so far: these tests have not yet run on a GPU).
"""
import importlib.util

import numpy as np
import pytest

import engine
from engine import modeldata
from engine.backends.cpu import CpuBackend
from engine.backends.gpu import device_count

if importlib.util.find_spec("cupy") is None:
    _SKIP = "CuPy is not installed (pip install 'survscan[gpu]'): the GPU backend cannot run"
elif device_count() < 1:
    _SKIP = "CuPy is installed but sees no CUDA device: the GPU backend cannot run"
else:
    _SKIP = None

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
RTOL = 1e-8


def _cohorts():
    df = engine.datasets.load_rossi()
    heart = engine.datasets.load_stanford_heart()
    rng = np.random.default_rng(5)
    return {
        "rossi": engine.Cohort.from_frame(df, time="week", event="arrest", covariates=COVARIATES),
        "rossi strata": engine.Cohort.from_frame(df, time="week", event="arrest",
                                                 covariates=COVARIATES[:-1], strata="prio"),
        "rossi weights": engine.Cohort.from_frame(df.assign(w=rng.integers(0, 4, len(df))),
                                                  time="week", event="arrest",
                                                  covariates=COVARIATES, weights="w"),
        "heart": engine.Cohort.from_frame(heart, time="stop", event="event", start="start",
                                          id="id", covariates=["age", "year", "surgery",
                                                               "transplant"]),
        "K = N/2": engine.simulate(4000, 30, n_strata=2000, seed=2),
        "sparse": engine.simulate(20_000, 200, density=0.05, seed=3),
    }


COHORTS = _cohorts() if _SKIP is None else {}
NAMES = ["rossi", "rossi strata", "rossi weights", "heart", "K = N/2", "sparse"]


def _pair(name, efron):
    from engine.backends.gpu import GpuBackend
    md = modeldata.build(COHORTS[name])
    md2 = modeldata.build(COHORTS[name])
    cpu, gpu = CpuBackend(md, efron), GpuBackend(md2, efron)
    beta = np.random.default_rng(1).normal(size=md.p) * 0.1
    cpu.set_beta(beta)
    gpu.set_beta(beta)
    return md, cpu, gpu


@pytest.mark.parametrize("efron", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_kernels_equal_cpu(name, efron):
    md, cpu, gpu = _pair(name, efron)
    for j in range(min(md.p, 50)):
        np.testing.assert_allclose(gpu.grad_hess(j), cpu.grad_hess(j), rtol=RTOL, atol=1e-12)
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    ll, g = cpu.loglik_gradient()
    ll2, g2 = gpu.loglik_gradient()
    assert ll2 == pytest.approx(ll, rel=RTOL)
    np.testing.assert_allclose(g2, g, rtol=RTOL, atol=1e-10 * np.abs(g).max())
    cols = np.arange(min(md.p, 30))
    _, gi, info = cpu.information(cols)
    _, gi2, info2 = gpu.information(cols)
    np.testing.assert_allclose(gi2, gi, rtol=RTOL, atol=1e-10 * np.abs(gi).max())
    np.testing.assert_allclose(info2, info, rtol=RTOL, atol=1e-10 * np.abs(info).max())
    for j, delta in [(0, 0.3), (md.p - 1, -0.2)]:
        cpu.update(j, delta)
        gpu.update(j, delta)
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    np.testing.assert_allclose(gpu.grad_hess(1), cpu.grad_hess(1), rtol=RTOL, atol=1e-12)


def test_weights_after_construction_equal_cpu():
    md, cpu, gpu = _pair("rossi", True)
    w = np.random.default_rng(7).integers(0, 3, md.n).astype(float)
    cpu.set_weights(w.copy())
    gpu.set_weights(w.copy())
    assert gpu.loglik() == pytest.approx(cpu.loglik(), rel=RTOL)
    np.testing.assert_allclose(gpu.grad_hess(2), cpu.grad_hess(2), rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("solver", ["auto", "ccd"])
@pytest.mark.parametrize("penalty", [None, "l1", "l2"])
@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("name", NAMES)
def test_fit_equals_cpu(name, ties, penalty, solver):
    cohort = COHORTS[name]
    pen = {None: None, "l1": engine.L1(5.0), "l2": engine.L2(5.0)}[penalty]
    fits = [engine.fit(cohort, ties=ties, penalty=pen, solver=solver, tol=1e-12, backend=b)
            for b in ("cpu", "gpu")]
    a, b = (f.coef.to_numpy() for f in fits)
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-9)
    assert fits[1].loglik == pytest.approx(fits[0].loglik, rel=RTOL)


def test_auto_takes_the_gpu():
    from engine.backends import get_backend
    from engine.backends.gpu import GpuBackend
    assert get_backend("auto") is GpuBackend


def test_float32_close_to_float64():
    from engine.backends.gpu import GpuBackend
    md = modeldata.build(COHORTS["sparse"])
    cpu, gpu32 = CpuBackend(md, False), GpuBackend(modeldata.build(COHORTS["sparse"]), False,
                                                   dtype=np.float32)
    for j in range(20):
        g, h = cpu.grad_hess(j)
        g32, h32 = gpu32.grad_hess(j)
        assert abs(g32 - g) <= 1e-3 * max(abs(g), 1e-3 * h) and abs(h32 - h) <= 1e-4 * h
