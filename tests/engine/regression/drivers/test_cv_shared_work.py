"""Cross-validation on one sorted Problem with the plane-corrected steps gives the curve and the
lambda of the plain proximal-Newton steps (the path before issue 20's speed-ups)."""
import numpy as np
import pytest

import engine
from engine.regression.backends.cox_cpu import CoxCpuBackend


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_cv_curve_and_lambda_equal_the_plain_steps(ties, monkeypatch):
    cohort = engine.simulate(1500, 60, density=0.1, seed=7)
    out = {}
    for plane in (False, True):
        monkeypatch.setattr(CoxCpuBackend, "plane_step", plane)
        out[plane] = engine.cross_validate(cohort, folds=4, grid=6, seed=1, ties=ties,
                                           tol=1e-10)
    plain, plane = out[False], out[True]
    np.testing.assert_allclose(plane.curve["mean"], plain.curve["mean"], rtol=1e-6)
    assert plane.penalty.lam == plain.penalty.lam
    np.testing.assert_allclose(plane.fit.coef, plain.fit.coef, rtol=1e-6, atol=1e-8)
