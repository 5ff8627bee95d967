"""The plane correction of the proximal-Newton step (backends/cox_subspace): its exact curvature
equals the observed information, and fits with it reach the optimum of the plain step."""
import numpy as np
import pytest

import engine
from engine.regression.backends.cox_cpu import CoxCpuBackend
from engine.regression.backends.linear_predictor import set_linear_predictor

from contract import CASES, away_from_zero, problem

COX = [c for c in CASES if c.options["model"] == "cox"]


@pytest.fixture(params=COX, ids=[c.name for c in COX])
def case(request):
    return request.param


def _weights(n, seed):
    w = np.random.default_rng(seed).uniform(0.5, 2.0, n)
    w[::7] = 0.0
    return w


@pytest.mark.parametrize("weighted", [False, True])
def test_direction_curvature_is_the_information_along_the_directions(case, weighted):
    """C = D' I D for two beta-space directions D, I the observed information (the Newton
    solver's, itself checked against finite differences and R in the contract tests)."""
    pr = problem(case)
    if weighted:
        pr.set_weights(_weights(pr.model.data.n, 1))
    pr.set_beta(away_from_zero(pr.p))
    _, _, info = pr.model.information(np.arange(pr.p))
    rng = np.random.default_rng(2)
    D = rng.normal(size=(pr.p, 2))
    md = pr.model.data
    U = np.vstack([set_linear_predictor(md.indptr, md.indices, md.values, md.vptr, D[:, a],
                                        md.n) for a in range(2)])
    C = pr.model.backend.direction_curvature(U)
    np.testing.assert_allclose(C, D.T @ info @ D, rtol=1e-10)


def _fit(cohort, penalty, plane, monkeypatch, **kw):
    monkeypatch.setattr(CoxCpuBackend, "plane_step", plane)
    return engine.fit(cohort, penalty=penalty, solver="prox_newton", tol=1e-12, **kw)


@pytest.mark.parametrize("penalty", [engine.L1(2.0), engine.L2(5.0)], ids=["l1", "l2"])
def test_plane_step_reaches_the_plain_steps_optimum(case, penalty, monkeypatch):
    cohort = case.cohort(case.frame())
    plain = _fit(cohort, penalty, False, monkeypatch, **case.options)
    plane = _fit(cohort, penalty, True, monkeypatch, **case.options)
    assert plain.converged and plane.converged
    np.testing.assert_allclose(plane.coef, plain.coef, rtol=1e-6, atol=1e-8)


def test_plane_step_on_a_sparse_design_takes_fewer_steps(monkeypatch):
    """N = 3,000, P = 200 at 5% density, L1 at 0.05 lambda_max with weights: the same
    coefficients as the plain steps, in fewer outer steps (the point of the correction)."""
    cohort = engine.simulate(3000, 200, density=0.05, seed=4)
    top = engine.path(cohort, grid=2).lambda_max
    w = _weights(cohort.n, 5)
    fits = {}
    for plane in (False, True):
        monkeypatch.setattr(CoxCpuBackend, "plane_step", plane)
        pr = engine.Problem.from_cohort(cohort, engine.FitOptions(solver="prox_newton",
                                                                  tol=1e-12))
        pr.set_weights(w)
        lam1, lam2 = pr.penalty_vectors(engine.L1(0.05 * top))
        fits[plane] = pr.solve(lam1, lam2)
    assert fits[False].converged and fits[True].converged
    np.testing.assert_allclose(fits[True].beta, fits[False].beta, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(fits[True].beta == 0, fits[False].beta == 0)
    assert fits[True].n_iter < fits[False].n_iter


def test_a_greatly_amplified_previous_step_keeps_eta_exact(monkeypatch):
    """With coarse inner solves the plane can take hundreds of thousands of a tiny previous
    step; its eta change must then be formed anew, not from two etas' difference (whose 1e-6
    rounding drift, so amplified, left eta far from X beta: the fit 'converged' to a wrong point
    and the auto solver's KKT check looped to max_iter).  Every path point equals a direct fit."""
    from engine.regression.solvers import prox_newton
    cohort = engine.simulate(300, 8, density=0.4, seed=12)
    monkeypatch.setattr(prox_newton, "_INNER_TOL_FACTOR", 0.1)
    path = engine.path(cohort, grid=6, tol=1e-12)
    assert path.converged.all()
    monkeypatch.undo()
    for lam, row in path.coef.iterrows():
        direct = engine.fit(cohort, penalty=engine.L1(lam), tol=1e-12)
        np.testing.assert_allclose(row, direct.coef, rtol=1e-7, atol=1e-9)
