"""The Newton solvers' line searches allow the backend's rounding of the log-likelihood
(BackendModel.rounding: 1e-12 relative in float64, FLOAT32_TOL in float32).

On an H100 a float32 L1 fit of the Stanford heart data stopped 1.2e-3 of max |beta| from the
float64 optimum: near the optimum a Newton step lowers the objective by less than float32's
rounding of a sum of N log terms, so a line search asking for f <= f0 + 1e-12 |f0| took the
noise for a rise, halved the step 40 times and declared convergence.  Here the same happens on
the CPU, with a log-likelihood carrying noise of float32's size (1e-6 relative: float32's 6e-8
over a sum of 172 log terms; a fixed function of the linear predictor): with the float64
allowance the Newton fit stops 1.6e-3 of max |beta| away, with FLOAT32_TOL 3e-6.
"""
import numpy as np
import pytest

import engine
from engine.regression.fit import fit_problem
from engine.regression.models.base import BackendModel
from engine.regression.options import FLOAT32_TOL, fit_options
from engine.regression.problem import Problem


def heart_problem(solver, monkeypatch, rounding):
    """The heart cohort's Cox problem at tol = FLOAT32_TOL, its log-likelihood noisy at 1e-6
    relative and its model's rounding set to ``rounding``."""
    heart = engine.datasets.load_stanford_heart()
    cohort = engine.Cohort.from_frame(heart, time="stop", event="event", start="start",
                                      id="id", covariates=["age", "year", "surgery",
                                                           "transplant"])
    problem = Problem.from_cohort(cohort, fit_options("fit", "cox", {
        "ties": "efron", "solver": solver, "tol": FLOAT32_TOL}))
    model = problem.model
    exact = model.loglik
    monkeypatch.setattr(model, "loglik", lambda: exact() * (
        1.0 + 1e-6 * np.sin(1e7 * float(model.backend.state.eta.sum()))))
    monkeypatch.setattr(BackendModel, "rounding", property(lambda self: rounding))
    return cohort, problem


@pytest.mark.parametrize("solver,penalty", [("auto", engine.L1(2.0)), ("newton", None)])
def test_noisy_loglik_reaches_the_optimum(solver, penalty, monkeypatch):
    cohort, problem = heart_problem(solver, monkeypatch, FLOAT32_TOL)
    res = fit_problem(problem, penalty)
    monkeypatch.undo()
    exact = engine.fit(cohort, ties="efron", penalty=penalty, tol=1e-12)
    scale = np.abs(exact.coef.to_numpy()).max()
    assert res.converged
    np.testing.assert_allclose(res.coef.to_numpy(), exact.coef.to_numpy(), rtol=0,
                               atol=1e-4 * scale)


def test_rounding_follows_the_backend_precision():
    cohort = engine.simulate(300, 3, seed=0)
    model = Problem.from_cohort(cohort, fit_options("fit", "cox", {})).model
    assert model.rounding == 1e-12
    model.backend.dtype = np.dtype(np.float32)
    assert model.rounding == FLOAT32_TOL
