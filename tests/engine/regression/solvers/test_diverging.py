"""A large finite coefficient is not taken for a diverging one (solvers/state.py diverging).

A covariate with one outlying value (x = 40 among standard normals) and a coefficient of about
1 has |beta| x range of about 45, beyond DIVERGED (30): the old rule (large, unpenalised and
still moving outward) froze it and reported +inf with a monotone-likelihood warning, for every
solver.  The likelihood keeps its curvature there, so the estimate is finite: it must equal
statsmodels' to 1e-6, on the CPU and through the GPU's CCD kernel (the CUDA emulator or a
device).  A truly monotone likelihood is still reported infinite.
"""
import warnings

import numpy as np
import pytest
import statsmodels.api as sm

import engine
from engine.core.errors import MonotoneLikelihoodWarning


def outlier_data(seed=0, n=2000):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[0] = 40.0
    return rng, x


@pytest.mark.parametrize("solver", ["auto", "newton", "ccd"])
def test_logistic_outlier_is_finite(solver):
    rng, x = outlier_data()
    y = (rng.random(x.size) < 1 / (1 + np.exp(-(0.2 + x)))).astype(float)
    y[0] = 1.0
    want = sm.Logit(y, sm.add_constant(x)).fit(disp=0, tol=1e-12).params
    cohort = engine.Cohort.from_arrays(time=None, event=y, X=x[:, None], names=["x"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonotoneLikelihoodWarning)
        fit = engine.fit(cohort, model="logistic", solver=solver, tol=1e-12, max_iter=5000)
    np.testing.assert_allclose(fit.coef.to_numpy(), want, rtol=1e-6)
    assert np.abs(fit.coef["x"]) * np.ptp(x) > 30


def cox_outlier_cohort():
    rng, x = outlier_data(1, 1500)
    t = rng.exponential(size=x.size) / np.exp(0.9 * x)
    c = rng.exponential(2.0, size=x.size)
    return engine.Cohort.from_arrays(time=np.minimum(t, c), event=(t <= c).astype(int),
                                     X=x[:, None], names=["x"]), x


@pytest.mark.parametrize("solver", ["auto", "newton", "ccd"])
def test_cox_outlier_is_finite(solver):
    cohort, x = cox_outlier_cohort()
    want = sm.PHReg(np.asarray(cohort.time), x[:, None], status=np.asarray(cohort.event),
                    ties="breslow").fit(tol=1e-12).params
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonotoneLikelihoodWarning)
        fit = engine.fit(cohort, solver=solver, tol=1e-12, max_iter=5000)
    np.testing.assert_allclose(fit.coef.to_numpy(), want, rtol=1e-6)
    assert np.abs(fit.coef["x"]) * np.ptp(x) > 30


def test_gpu_ccd_outlier_is_finite(where):
    """The same through ccd_step.cu's divergence test (its copy of state.diverging)."""
    cohort, _ = cox_outlier_cohort()
    cpu = engine.fit(cohort, solver="ccd", tol=1e-12, max_iter=5000)
    gpu = engine.fit(cohort, solver="ccd", tol=1e-12, max_iter=5000, backend="gpu")
    assert np.isfinite(gpu.coef["x"])
    np.testing.assert_allclose(gpu.coef.to_numpy(), cpu.coef.to_numpy(), rtol=1e-8)


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
@pytest.mark.parametrize("solver", ["auto", "ccd"])
def test_monotone_likelihood_still_infinite(where, backend, solver):
    """Every event in the treated group before any control's: the likelihood rises for ever
    in beta, and the coefficient is reported +inf with the warning naming it."""
    rng = np.random.default_rng(3)
    n = 200
    z = (np.arange(n) % 2).astype(float)
    t = np.where(z == 1, rng.uniform(0, 1, n), rng.uniform(2, 3, n))
    e = np.where(z == 1, 1, rng.random(n) < 0.0).astype(int)
    other = rng.normal(size=n)
    cohort = engine.Cohort.from_arrays(time=t, event=e, X=np.c_[z, other], names=["z", "x"])
    with pytest.warns(MonotoneLikelihoodWarning, match="z"):
        fit = engine.fit(cohort, solver=solver, backend=backend)
    assert fit.coef["z"] == np.inf and np.isfinite(fit.coef["x"])
