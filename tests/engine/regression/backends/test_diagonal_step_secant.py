"""The secant correction of the row block's Gram matrix (backends/diagonal_step.SR1_MIN): the
update itself by its definition, and fits with it reach the optimum of the plain diagonal
model, in fewer outer steps, a warm start and a cold one agreeing to 1e-8 at the default tol."""
import numpy as np
import pytest

import engine
from engine.regression.backends import diagonal_step
from engine.regression.backends.cox_cpu import CoxCpuBackend


def test_a_rank_one_gap_is_removed_by_its_share():
    """Q - H = c v v' (the diagonal model's over-statement of the Cox curvature): one secant
    pair (s, H s) takes SR1_SHARE of it off, whatever s (not orthogonal to v)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 12))
    H = A.T @ A
    v = rng.normal(size=12)
    Q = H + 4.0 * np.outer(v, v)
    s = rng.normal(size=12)
    new = diagonal_step.secant_corrected(Q, s, H @ s)
    np.testing.assert_allclose(new, Q - diagonal_step.SR1_SHARE * (Q - H), rtol=1e-10,
                               atol=1e-10)


def test_no_gap_or_a_lost_definiteness_leaves_q_as_it_is():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(30, 8))
    Q = A.T @ A
    s = rng.normal(size=8)
    assert diagonal_step.secant_corrected(Q, s, Q @ s) is Q              # the model is exact
    assert diagonal_step.secant_corrected(Q, s, Q @ s * (1 + 1e-9)) is Q  # rounding
    # a pair whose y says far less curvature than Q along s: taking 0.9 of the gap would leave
    # Q indefinite where the pair came from a non-convex step
    v = np.zeros(8)
    v[0] = 1.0
    assert diagonal_step.secant_corrected(Q, v, -Q @ v) is Q


def _solve(cohort, w, penalty, monkeypatch, secant, plane):
    monkeypatch.setattr(CoxCpuBackend, "plane_step", plane)
    monkeypatch.setattr(diagonal_step, "SR1_MIN", 1e-3 if secant else np.inf)
    pr = engine.Problem.from_cohort(cohort, engine.FitOptions(solver="prox_newton", tol=1e-12))
    if w is not None:
        pr.set_weights(w)
    lam1, lam2 = pr.penalty_vectors(penalty)
    state = pr.solve(lam1, lam2)
    pr.model.set_beta(state.beta)
    return state, state.objective(pr.model.loglik())


@pytest.mark.parametrize("plane", [False, True])
def test_fits_with_the_correction_reach_the_plain_optimum(monkeypatch, plane):
    """N = 3,000, P = 200, weights with zeros, L1 at 0.05 lambda_max: with and without the
    plane step.  (Without the plane step and without the fresh retry of prox_newton, a step
    along an overshooting corrected model once failed its line search and was taken for
    convergence 3 steps in, 3.3 above the optimum.)"""
    cohort = engine.simulate(3000, 200, density=0.05, seed=4)
    top = engine.path(cohort, grid=2).lambda_max
    w = np.random.default_rng(5).uniform(0.5, 2.0, cohort.n)
    w[::7] = 0.0
    penalty = engine.L1(0.05 * top)
    plain, f_plain = _solve(cohort, w, penalty, monkeypatch, secant=False, plane=plane)
    fixed, f_fixed = _solve(cohort, w, penalty, monkeypatch, secant=True, plane=plane)
    assert plain.converged and fixed.converged
    assert f_fixed == pytest.approx(f_plain, rel=1e-12)
    np.testing.assert_allclose(fixed.beta, plain.beta, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(fixed.beta == 0, plain.beta == 0)


@pytest.fixture(scope="module")
def wide():
    cohort = engine.simulate(100_000, 1000, density=0.05, seed=0)
    return cohort, engine.lambda_max(cohort)


def test_the_correction_takes_fewer_outer_steps(wide, monkeypatch):
    """10^5 x 1,000 sparse, L1 at 0.1 lambda_max (the row block's Gram path), tol 1e-12: 17
    outer steps with the plain diagonal model, 12 with the correction, to the same optimum."""
    cohort, top = wide
    plain, f_plain = _solve(cohort, None, engine.L1(0.1 * top), monkeypatch, False, True)
    fixed, f_fixed = _solve(cohort, None, engine.L1(0.1 * top), monkeypatch, True, True)
    assert f_fixed == pytest.approx(f_plain, rel=1e-13)
    np.testing.assert_allclose(fixed.beta, plain.beta, rtol=0, atol=1e-8)
    assert fixed.n_iter < plain.n_iter


def test_a_warm_start_and_a_cold_one_agree_at_the_default_tol(wide):
    """What a sensitivity grid's variant and its separate engine.fit are: the same fit from
    the next penalty's solution and from zeros, at tol = 1e-9, equal to 1e-8 (at steps of
    1e-6 they differed by 1e-7)."""
    cohort, top = wide
    before = engine.fit(cohort, penalty=engine.L1(0.3 * top), unpenalized=["x0"])
    cold = engine.fit(cohort, penalty=engine.L1(0.1 * top), unpenalized=["x0"])
    warm = engine.fit(cohort, penalty=engine.L1(0.1 * top), unpenalized=["x0"],
                      init=before.coef.to_numpy())
    assert cold.converged and warm.converged
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=0, atol=1e-8)
