"""The grid's shortcuts change no number: a penalty path warm-started with the previous
solve's gradient (no screening pass) equals separate engine.fit calls (1e-8) and the same solves
without the gradient; the Wald row of the coefficient of interest from the unpenalised block
(FitResult.summary_of) equals engine.fit's summary; a layout shares the cohort's covariates."""
import warnings

import numpy as np
import pytest

import engine
from engine.sensitivity.variant import derived_cohort

WALD = ["coef", "hr", "se", "hr_lower", "hr_upper", "p"]


def _sparse_cohort(seed=0):
    return engine.simulate(2_000, 40, density=0.2, seed=seed)


def _lambda_max(cohort):
    return float(np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p))[1:])))


def test_penalty_path_variants_equal_their_own_fits_and_summaries():
    cohort = _sparse_cohort()
    top = _lambda_max(cohort)
    rng = np.random.default_rng(1)
    res = engine.sensitivity_study(cohort, "x0", vary={
        "subgroup": {"all": None, "half": rng.random(cohort.n) < 0.5},
        "covariates": {"first 20": cohort.names[:20], "all": None},
        "penalty": [engine.L1(r * top) for r in (0.5, 0.3, 0.2, 0.1, 0.05)],
    }, base={"tol": 1e-12})
    t = res.table
    assert (t["error"] == "").all() and t["converged"].all()
    for _, row in t.iterrows():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = res.refit(int(row["variant"])).summary.loc["x0"]
        np.testing.assert_allclose(row["estimate"], alone["coef"], rtol=0, atol=1e-8)
        for ours, theirs in (("se", "se"), ("hr_lower", "hr_lower"), ("hr_upper", "hr_upper"),
                             ("p", "p")):
            np.testing.assert_allclose(row[ours], alone[theirs], rtol=1e-7,
                                       err_msg=f"variant {row['variant']} {ours}")


def test_a_solve_given_the_previous_gradient_equals_one_without():
    cohort = _sparse_cohort(seed=2)
    top = _lambda_max(cohort)
    problem = engine.Problem.from_cohort(cohort, unpenalized=["x0"])
    path = [engine.L1(r * top) for r in (0.4, 0.2, 0.1)]
    model, passes = problem.model, []
    counted = model.loglik_gradient_on
    model.loglik_gradient_on = lambda cols: passes.append(1) or counted(cols)
    ends, spent = {}, {}
    for reuse in (False, True):
        beta, gradient, out = None, None, []
        passes.clear()
        for penalty in path:
            lam1, lam2 = problem.penalty_vectors(penalty)
            state = problem.solve(lam1, lam2, beta, gradient=gradient if reuse else None)
            assert state.converged and state.gradient is not None
            beta, gradient = state.beta.copy(), state.gradient
            out.append(beta)
        ends[reuse], spent[reuse] = np.array(out), len(passes)
    np.testing.assert_allclose(ends[True], ends[False], rtol=0, atol=1e-12)
    assert spent[True] <= spent[False] - (len(path) - 1)    # a screening pass spared per step


@pytest.mark.parametrize("penalty", [None, "l1", "l2"])
def test_summary_of_equals_the_summary_rows(penalty):
    cohort = _sparse_cohort(seed=3)
    top = _lambda_max(cohort)
    prior = {None: None, "l1": engine.L1(0.2 * top), "l2": engine.L2(5.0)}[penalty]
    fit = engine.fit(cohort, penalty=prior, unpenalized=["x0", "x1"])
    names = ["x0", "x1", "x5"]
    ours = fit.summary_of(names)
    theirs = fit.summary.loc[names]
    np.testing.assert_array_equal(ours[WALD].to_numpy(), theirs[WALD].to_numpy())
    assert list(ours.index) == names


def test_a_layout_shares_the_covariates_it_keeps_whole():
    cohort = _sparse_cohort()
    whole = derived_cohort(cohort, id=np.arange(cohort.n))
    assert whole.X is cohort.X
    np.testing.assert_array_equal(whole.binary, cohort.binary)
    rows = derived_cohort(cohort, rows=np.arange(10))
    assert rows.X.shape == (10, cohort.p)
