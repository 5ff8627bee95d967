"""engine.bootstrap: count weights equal copied rows, subjects stay whole, the same seed gives
the same replicates everywhere, percentile coverage near the nominal level, clear errors."""
import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine.regression.drivers.bootstrap import percentiles
from engine.regression.drivers.resampling import bootstrap_counts, subjects


def _small():
    return engine.simulate(400, 6, density=0.25, seed=4)


@pytest.mark.slow  # starts a process pool and a Dask cluster: about 9 s
def test_same_seed_same_replicates_serial_threads_processes_dask(dask_client):
    cohort = _small()
    options = dict(penalty=engine.L1(2.0), replicates=12, seed=3)
    serial = engine.bootstrap(cohort, **options)
    for parallel in ("threads", "processes", dask_client, "dask"):
        other = engine.bootstrap(cohort, parallel=parallel, n_jobs=2 if parallel == "dask"
                                 else None, **options)
        np.testing.assert_array_equal(other.replicates.to_numpy(), serial.replicates.to_numpy())
        np.testing.assert_array_equal(other.summary.to_numpy(), serial.summary.to_numpy())
    again = engine.bootstrap(cohort, penalty=engine.L1(2.0), replicates=12, seed=4)
    assert not np.array_equal(again.replicates.to_numpy(), serial.replicates.to_numpy())


def test_a_replicate_equals_the_fit_on_copied_rows():
    """Breslow with integer case weights is the likelihood of the rows repeated."""
    cohort = _small()
    boot = engine.bootstrap(cohort, replicates=3, seed=9, tol=1e-12)
    codes, n_subjects = subjects(cohort)
    counts = bootstrap_counts(n_subjects, 9, 2)[codes]
    rows = np.repeat(np.arange(cohort.n), counts)
    copied = engine.Cohort.from_arrays(time=cohort.time[rows], event=cohort.event[rows],
                                       X=sp.csr_matrix(cohort.X)[rows], names=cohort.names)
    direct = engine.fit(copied, tol=1e-12).coef
    np.testing.assert_allclose(boot.replicates.iloc[2], direct, rtol=1e-8, atol=1e-10)


def test_fine_gray_and_logistic_replicates_equal_fits_on_copied_rows():
    """Every model bootstraps by count weights: Fine-Gray (its censoring Kaplan-Meier
    re-estimated with them) and logistic equal their fits on the rows repeated."""
    df = engine.datasets.load_bmtcrr().assign(male=lambda d: (d["Sex"] == "M").astype(float))
    fg = engine.Cohort.from_frame(df, time="ftime", event="Status", covariates=["Age", "male"],
                                  competing_risks=True)
    binary = engine.Cohort.from_frame(df.assign(relapse=(df["Status"] == 1).astype(int)),
                                      time="ftime", event="relapse", covariates=["Age", "male"])
    for cohort, model in ((fg, "fine_gray"), (binary, "logistic")):
        boot = engine.bootstrap(cohort, model=model, replicates=2, seed=5, tol=1e-12)
        codes, n_subjects = subjects(cohort)
        rows = np.repeat(np.arange(cohort.n), bootstrap_counts(n_subjects, 5, 1)[codes])
        copied = engine.Cohort.from_frame(df.iloc[rows].assign(
            relapse=(df["Status"].iloc[rows] == 1).astype(int)), time="ftime",
            event="Status" if model == "fine_gray" else "relapse",
            covariates=["Age", "male"], competing_risks=model == "fine_gray")
        direct = engine.fit(copied, model=model, tol=1e-12).coef
        np.testing.assert_allclose(boot.replicates.iloc[1], direct, rtol=1e-7, atol=1e-9)


def test_subjects_are_resampled_whole():
    ids = np.repeat(np.arange(50), 3)
    cohort = engine.Cohort.from_arrays(time=np.tile([1.0, 2.0, 3.0], 50),
                                       start=np.tile([0.0, 1.0, 2.0], 50),
                                       event=np.tile([0, 0, 1], 50), id=ids,
                                       X=np.random.default_rng(0).normal(size=(150, 2)))
    codes, n_subjects = subjects(cohort)
    assert n_subjects == 50
    counts = bootstrap_counts(n_subjects, 0, 0)
    assert counts.sum() == 50
    w = counts[codes]
    assert np.all(w[0::3] == w[1::3]) and np.all(w[0::3] == w[2::3])


def test_summary_columns_and_nonzero_fraction():
    cohort = _small()
    boot = engine.bootstrap(cohort, penalty=engine.L1(8.0), replicates=30, seed=1, level=0.9)
    s = boot.summary
    assert list(s.columns) == ["coef", "lower", "upper", "nonzero_fraction"]
    assert boot.replicates.shape == (30, cohort.p)
    np.testing.assert_array_equal(s["nonzero_fraction"], (boot.replicates != 0).mean())
    np.testing.assert_allclose(s["lower"], boot.replicates.quantile(0.05))
    np.testing.assert_allclose(s["upper"], boot.replicates.quantile(0.95))
    assert np.all(s["lower"] <= s["upper"])
    assert 0 < s["nonzero_fraction"].min() <= s["nonzero_fraction"].max() <= 1


@pytest.mark.slow
def test_percentile_intervals_cover_near_the_nominal_level():
    beta = np.array([0.5, -0.5, 0.0])
    hits = []
    for rep in range(40):
        rng = np.random.default_rng(rep)
        X = rng.normal(size=(200, 3))
        t = rng.exponential(1.0 / np.exp(X @ beta))
        c = rng.exponential(2.0, size=200)
        cohort = engine.Cohort.from_arrays(time=np.minimum(t, c), event=(t <= c).astype(int),
                                           X=X)
        s = engine.bootstrap(cohort, replicates=150, seed=rep).summary
        hits.append((s["lower"] <= beta) & (beta <= s["upper"]))
    coverage = np.mean(hits)
    assert 0.88 <= coverage <= 0.99, coverage


@pytest.mark.parametrize("kwargs, match", [
    ({"replicates": 1}, "replicates"), ({"level": 1.5}, "level"), ({"level": 95}, "level"),
    ({"parallel": "mpi"}, "parallel"), ({"penalty": "l1"}, "penalty"), ({"model": "x"}, "model"),
])
def test_bad_arguments_are_clear_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        engine.bootstrap(_small(), **kwargs)


def test_percentiles_keep_a_diverging_replicate_infinite():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(41, 3))
    values[:3, 1] = -np.inf        # far from the 50% point: the median stays numpy's
    values[:, 2] = -np.inf         # every replicate diverged
    values[:39, 0] = np.sort(values[:39, 0])
    values[39:, 0] = np.inf        # two diverged upwards: the 97.5% point lies beside them
    q = [0.025, 0.5, 0.975]
    got = percentiles(values, q)
    np.testing.assert_array_equal(got[:, 2], -np.inf)
    assert got[1, 1] == np.quantile(values[:, 1], 0.5)
    assert got[0, 1] == -np.inf and got[2, 0] == np.inf
    finite = np.isfinite(values).all(axis=0)
    np.testing.assert_array_equal(got[:, finite], np.quantile(values[:, finite], q, axis=0))
