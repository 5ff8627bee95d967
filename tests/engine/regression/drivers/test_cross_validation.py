"""engine.cross_validate: folds by subject within strata, the Verweij-van Houwelingen score,
the same numbers serially / on threads / over processes / on Dask, support recovery, auto
search, errors."""
import threading

import numpy as np
import pytest

import engine
from engine.regression.drivers.resampling import fold_of_rows


@pytest.fixture(scope="module")
def sparse_truth():
    return engine.simulate(1500, 40, density=0.1, seed=11, nonzero=0.2)


def _small():
    return engine.simulate(500, 8, density=0.25, seed=5)


def test_same_seed_same_result_serial_threads_processes_dask(dask_client):
    cohort = _small()
    options = dict(folds=4, repeats=2, grid=5, seed=7)
    serial = engine.cross_validate(cohort, **options)
    threads = engine.cross_validate(cohort, parallel="threads", n_jobs=2, **options)
    pool = engine.cross_validate(cohort, parallel="processes", n_jobs=2, **options)
    dask = engine.cross_validate(cohort, parallel=dask_client, **options)
    for other in (threads, pool, dask):
        np.testing.assert_array_equal(other.curve.to_numpy(), serial.curve.to_numpy())
        assert other.penalty == serial.penalty
        np.testing.assert_array_equal(other.fit.coef, serial.fit.coef)
    assert list(serial.curve.columns[:3]) == ["lambda", "mean", "sd"]
    assert serial.curve.shape == (5, 3 + 8)
    other_seed = engine.cross_validate(cohort, folds=4, repeats=2, grid=5, seed=8)
    assert not np.array_equal(other_seed.curve["mean"], serial.curve["mean"])


def test_folds_keep_subjects_whole_and_cover_every_stratum():
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(300), 2)                    # two episodes per subject
    strata = np.repeat(rng.integers(0, 6, 300), 2)
    cohort = engine.Cohort.from_arrays(time=np.tile([1.0, 2.0], 300),
                                       start=np.tile([0.0, 1.0], 300),
                                       event=rng.integers(0, 2, 600), X=rng.normal(size=(600, 2)),
                                       id=ids, strata=strata)
    fold = fold_of_rows(cohort, 5, seed=3, repeat=0)
    assert np.all(fold[0::2] == fold[1::2])
    for s in np.unique(strata):
        counts = np.bincount(fold[0::2][strata[0::2] == s], minlength=5)
        assert counts.min() >= 1 and counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(fold, fold_of_rows(cohort, 5, seed=3, repeat=0))
    assert not np.array_equal(fold, fold_of_rows(cohort, 5, seed=3, repeat=1))


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_score_is_full_minus_training_loglik_at_the_training_fit(ties):
    cohort = _small()
    cv = engine.cross_validate(cohort, folds=3, grid=4, seed=2, ties=ties, tol=1e-12)
    fold = fold_of_rows(cohort, 3, seed=2, repeat=0)
    keep = fold != 1
    train = engine.Cohort.from_arrays(time=cohort.time[keep], event=cohort.event[keep],
                                      X=cohort.X[keep], names=cohort.names)
    for row in (1, 3):
        lam = cv.curve["lambda"].iloc[row]
        beta = engine.fit(train, ties=ties, penalty=engine.L1(lam), tol=1e-12).coef.to_numpy()
        expected = (engine.loglik(cohort, beta, ties=ties)
                    - engine.loglik(train, beta, ties=ties))
        assert cv.curve["r0_f1"].iloc[row] == pytest.approx(expected, rel=1e-7, abs=1e-7)


def test_fine_gray_score_is_full_minus_training_pseudo_loglik():
    """Fine-Gray folds: the training fit (censoring weights from the training rows alone) and
    the score l(beta_-k) - l_-k(beta_-k), equal to fits and log pseudo-likelihoods of the
    cohorts built from the rows themselves."""
    df = engine.datasets.load_bmtcrr().assign(male=lambda d: (d["Sex"] == "M").astype(float),
                                              aml=lambda d: (d["D"] == "AML").astype(float))

    def cohort_of(frame):
        return engine.Cohort.from_frame(frame, time="ftime", event="Status",
                                        covariates=["Age", "male", "aml"], competing_risks=True)

    cohort = cohort_of(df)
    cv = engine.cross_validate(cohort, model="fine_gray", folds=3, grid=3, seed=1, tol=1e-12)
    keep = fold_of_rows(cohort, 3, seed=1, repeat=0) != 2
    train = cohort_of(df[keep].reset_index(drop=True))
    lam = cv.curve["lambda"].iloc[2]
    beta = engine.fit(train, model="fine_gray", penalty=engine.L1(lam),
                      tol=1e-12).coef.to_numpy()
    expected = (engine.loglik(cohort, beta, model="fine_gray")
                - engine.loglik(train, beta, model="fine_gray"))
    assert cv.curve["r0_f2"].iloc[2] == pytest.approx(expected, rel=1e-7, abs=1e-7)


def test_lambda_max_and_default_grid():
    cohort = _small()
    cv = engine.cross_validate(cohort, folds=3, seed=0)
    lam_max = np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p))))
    assert cv.lambda_max == pytest.approx(lam_max, rel=1e-12)
    lambdas = cv.curve["lambda"].to_numpy()
    assert lambdas.size == 10 and lambdas[0] == pytest.approx(lam_max)
    assert lambdas[-1] == pytest.approx(1e-3 * lam_max)
    at_max = engine.fit(cohort, penalty=engine.L1(lam_max * (1 + 1e-9)))
    assert np.all(at_max.coef == 0)


def test_unpenalized_is_honoured_in_lambda_max_and_refit():
    cohort = _small()
    cv = engine.cross_validate(cohort, folds=3, grid=4, unpenalized=["x0"], seed=0)
    alone = engine.Cohort.from_arrays(time=cohort.time, event=cohort.event,
                                      X=cohort.X[:, [0]], names=["x0"])
    b0 = engine.fit(alone, tol=1e-12).coef.iloc[0]
    beta = np.zeros(cohort.p)
    beta[0] = b0
    g = engine.gradient(cohort, beta)
    assert cv.lambda_max == pytest.approx(np.max(np.abs(g[1:])), rel=1e-6)
    assert not cv.fit.penalized["x0"] and cv.fit.penalized.drop("x0").all()
    assert cv.fit.coef["x0"] != 0


def _f1(coef, truth):
    chosen, true = coef != 0, truth != 0
    tp = np.sum(chosen & true)
    return 0.0 if tp == 0 else 2 * tp / (np.sum(chosen) + np.sum(true))


def test_chosen_penalty_recovers_the_support_better_than_the_extremes(sparse_truth):
    cohort = sparse_truth
    cv = engine.cross_validate(cohort, folds=5, grid=12, seed=0)
    lambdas = cv.curve["lambda"].to_numpy()
    f1 = {lam: _f1(engine.fit(cohort, penalty=engine.L1(lam)).coef.to_numpy(),
                   cohort.beta_true) for lam in (lambdas[0], lambdas[-1])}
    chosen = _f1(cv.fit.coef.to_numpy(), cohort.beta_true)
    assert chosen > max(f1.values()) + 0.1, (chosen, f1)
    assert lambdas[-1] < cv.penalty.lam < lambdas[0]


def test_auto_search_agrees_with_the_grid_within_one_step(sparse_truth):
    cohort = sparse_truth
    grid = engine.cross_validate(cohort, folds=5, grid=13, seed=0)
    auto = engine.cross_validate(cohort, folds=5, seed=0, auto=True)
    step = 3.0 / 12                                              # decades between grid points
    assert abs(np.log10(auto.penalty.lam / grid.penalty.lam)) <= step + 1e-9
    assert auto.curve["mean"].max() >= grid.curve["mean"].max() - 1e-6


def test_l2_and_progress_and_cancel():
    cohort = _small()
    seen = []
    cv = engine.cross_validate(cohort, penalty="l2", folds=3, grid=4,
                               progress=lambda d, t: seen.append((d, t)))
    assert isinstance(cv.penalty, engine.L2) and seen[-1] == (12, 12)  # folds x grid steps
    stop = threading.Event()

    def progress(done, total):
        stop.set()

    with pytest.raises(engine.Cancelled):
        engine.cross_validate(cohort, folds=3, grid=4, progress=progress, cancel=stop)


@pytest.mark.parametrize("kwargs, match", [
    ({"folds": 1}, "folds"), ({"folds": 501}, "folds"), ({"folds": 2.5}, "folds"),
    ({"grid": [1.0, -1.0]}, "grid"), ({"grid": []}, "grid"), ({"grid": [0.0]}, "grid"),
    ({"grid": 1}, "grid"), ({"parallel": "thread"}, "parallel"), ({"n_jobs": 0}, "n_jobs"),
    ({"penalty": "l3"}, "penalty"), ({"repeats": 0}, "repeats"), ({"model": "weibull"}, "model"),
    ({"unpenalized": [f"x{j}" for j in range(8)]}, "unpenalized"),
])
def test_bad_arguments_are_clear_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        engine.cross_validate(_small(), **kwargs)


def test_bench_cv_writes_json_and_markdown(tmp_path):
    import json

    from bench.__main__ import main

    record = main(["cv", "--n", "400", "--p", "5", "--folds", "3", "--grid", "3",
                   "--parallel", "serial", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "cv_n400_p5_k3_g3.json").read_text())
    assert saved["runs"]["serial"]["max_abs_curve_diff"] == 0.0
    assert set(record["runs"]) == {"serial"} and (tmp_path / "cv_n400_p5_k3_g3.md").exists()
