"""engine.lambda_max (the scale of the penalty the app shows) against the brute-force O(N^2)
gradient of tests/support/oracles.py, its edge property (all zero above it, one coefficient just below),
and cross-validation's progress per (fold, grid point) step with a prompt Cancel."""
import threading

import numpy as np
import pytest

import engine
import oracles as O


def _rossi():
    df = engine.datasets.load_rossi()
    return engine.Cohort.from_frame(df, time="week", event="arrest",
                                    covariates=["fin", "age", "race", "wexp", "mar", "paro",
                                                "prio"])


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_lambda_max_is_the_largest_gradient_at_zero_against_brute_force(ties):
    cohort = _rossi()
    X = cohort.X.toarray()
    g = O.cox_gradient(cohort.time, cohort.event, X, np.zeros(X.shape[1]), ties=ties)
    expected = O.lambda_max_l1(g, np.ones(X.shape[1], bool))
    top = engine.lambda_max(cohort, ties=ties)
    assert top == pytest.approx(expected, rel=1e-10)
    assert engine.lambda_max(cohort, penalty="l2", ties=ties) == top
    above = engine.fit(cohort, ties=ties, penalty=engine.L1(top * (1 + 1e-9)))
    assert not above.coef.any()
    below = engine.fit(cohort, ties=ties, penalty=engine.L1(top * (1 - 1e-3)))
    assert list(below.coef[below.coef != 0].index) == [cohort.names[int(np.argmax(abs(g)))]]


def test_lambda_max_with_unpenalized_equals_the_path_and_the_oracle():
    cohort = _rossi()
    X = cohort.X.toarray()
    top = engine.lambda_max(cohort, unpenalized=["fin"])
    assert top == pytest.approx(engine.path(cohort, grid=2, unpenalized=["fin"]).lambda_max,
                                rel=1e-12)
    # oracle: Newton on fin alone, then the largest |gradient| of the others
    b = np.zeros(X.shape[1])
    for _ in range(50):
        b[0] -= (O.cox_gradient(cohort.time, cohort.event, X, b)[0]
                 / O.cox_hessian(cohort.time, cohort.event, X, b)[0, 0])
    g = O.cox_gradient(cohort.time, cohort.event, X, b)
    assert top == pytest.approx(np.max(np.abs(g[1:])), rel=1e-8)


def test_lambda_max_refuses_what_has_no_scale():
    cohort = _rossi()
    with pytest.raises(ValueError, match="penalty"):
        engine.lambda_max(cohort, penalty="l3")
    with pytest.raises(ValueError, match="unpenalized"):
        engine.lambda_max(cohort, unpenalized=list(cohort.names))


def test_cv_reports_every_fold_and_grid_point():
    cohort = engine.simulate(300, 8, density=0.4, seed=12)
    seen = []
    engine.cross_validate(cohort, folds=3, grid=4, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(k, 12) for k in range(1, 13)]


def test_cv_cancel_set_after_the_first_step_stops_inside_the_next_solve():
    cohort = engine.simulate(300, 8, density=0.4, seed=12)
    stop, seen = threading.Event(), []

    def progress(done, total):
        seen.append(done)
        stop.set()

    with pytest.raises(engine.Cancelled, match=r"fold 1, lambda 2 of 4, iteration 1"):
        engine.cross_validate(cohort, folds=3, grid=4, progress=progress, cancel=stop)
    assert seen == [1]   # the second grid point's solve stopped after its first iteration


@pytest.mark.slow
def test_cv_in_processes_reports_whole_folds_in_steps():
    cohort = engine.simulate(300, 8, density=0.4, seed=12)
    seen = []
    engine.cross_validate(cohort, folds=3, grid=4, parallel="processes", n_jobs=1,
                          progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4, 12), (8, 12), (12, 12)]


def test_path_cancel_set_during_a_fit_stops_after_its_iteration():
    class SetAfter:
        """A cancel event that reads as set from its (n + 1)-th look on."""

        def __init__(self, n):
            self.looks, self.n = 0, n

        def is_set(self):
            self.looks += 1
            return self.looks > self.n

    cohort = engine.simulate(300, 8, density=0.4, seed=12)
    small = 0.01 * engine.lambda_max(cohort)
    # looks: before the fit, after iteration 1, after iteration 2 -> set
    with pytest.raises(engine.Cancelled, match=r"path cancelled at lambda 1 of 1, iteration 2"):
        engine.path(cohort, grid=[small], cancel=SetAfter(2))
