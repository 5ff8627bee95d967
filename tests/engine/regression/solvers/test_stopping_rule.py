"""Proximal Newton's stop: a fit stops at steps of 1e-8 at the default tol (precise), a fit
that feeds a curve (a cross-validation fold, a path, a bootstrap replicate) at steps of 1e-6,
both at the same optimum, the coarse one in no more outer steps."""
import numpy as np

import engine
from engine.regression.fit import fit_problem


def test_coarse_fits_stop_sooner_at_the_same_optimum():
    cohort = engine.simulate(20_000, 300, density=0.05, seed=3)
    penalty = engine.L1(0.05 * engine.lambda_max(cohort))
    problem = engine.Problem.from_cohort(cohort, engine.FitOptions(solver="prox_newton"))
    precise = fit_problem(problem, penalty)
    coarse = fit_problem(problem, penalty, precise=False)
    tight = engine.fit(cohort, penalty=penalty, solver="prox_newton", tol=1e-14)
    assert precise.converged and coarse.converged and tight.converged
    assert coarse.n_iter < precise.n_iter
    np.testing.assert_allclose(precise.beta, tight.beta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(coarse.beta, tight.beta, rtol=0, atol=1e-5)
