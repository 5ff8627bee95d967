"""engine.simulate: the papers' (Yang2022, Yang2024) synthetic design (binary sparse X, sparse beta, exponential T)."""
import numpy as np
import pytest
import scipy.sparse as sp

from engine.data.simulate import simulate, simulate_arrays


def test_reproducible_from_seed():
    a = simulate_arrays(3000, 40, n_strata=5, seed=7)
    b = simulate_arrays(3000, 40, n_strata=5, seed=7)
    c = simulate_arrays(3000, 40, n_strata=5, seed=8)
    for x, y in zip(a, b):
        if sp.issparse(x):
            assert (x != y).nnz == 0
        else:
            np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])


def test_shapes_and_types():
    time, event, X, beta, strata = simulate_arrays(1000, 30, seed=1)
    assert time.shape == event.shape == (1000,) and beta.shape == (30,)
    assert strata is None
    assert sp.isspmatrix_csc(X) and X.shape == (1000, 30) and X.has_sorted_indices
    assert np.all(X.data == 1.0)
    assert np.all(time > 0) and np.all(np.isfinite(time))
    assert set(np.unique(event)) <= {0, 1}


@pytest.mark.parametrize("density", [0.01, 0.05, 0.5, 1.0])
def test_density(density):
    n, p = 20000, 50
    X = simulate_arrays(n, p, density=density, seed=2)[2]
    assert abs(X.nnz / (n * p) - density) <= 4 * np.sqrt(density * (1 - density) / (n * p)) + 1e-12
    assert X.has_canonical_format  # sorted rows, no duplicates


@pytest.mark.parametrize("dist", ["exponential", "uniform"])
@pytest.mark.parametrize("censoring", [0.2, 0.5, 0.8])
def test_censoring_fraction(dist, censoring):
    event = simulate_arrays(50000, 20, censoring=censoring, censoring_dist=dist, seed=3)[1]
    assert abs((1 - event.mean()) - censoring) < 0.01


def test_no_censoring_means_exponential_times():
    time, event, X, beta, _ = simulate_arrays(50000, 20, censoring=0, seed=4)
    assert event.all()
    unit = time * np.exp(X @ beta)  # T exp(x'beta) ~ Exp(1)
    assert abs(unit.mean() - 1) < 0.02 and abs(unit.var() - 1) < 0.05


@pytest.mark.parametrize("n, k", [(1000, 2), (1000, 7), (1000, 500), (999, 10)])
def test_strata_sizes(n, k):
    strata = simulate_arrays(n, 5, n_strata=k, seed=5)[4]
    sizes = np.bincount(strata, minlength=k)
    assert len(sizes) == k and sizes.min() >= n // k and sizes.max() <= -(-n // k)


def test_true_beta_sparsity():
    beta = simulate_arrays(100, 5000, seed=6)[3]
    assert abs(np.mean(beta != 0) - 0.2) < 0.02
    nonzero = beta[beta != 0]
    assert abs(nonzero.mean()) < 0.1 and abs(nonzero.std() - 1) < 0.1


def test_bad_arguments():
    for kwargs in [dict(density=0), dict(censoring=1.0), dict(n_strata=0),
                   dict(censoring_dist="weibull")]:
        with pytest.raises(ValueError):
            simulate_arrays(100, 5, **kwargs)


def test_simulate_returns_cohort_with_true_beta():
    from engine.data.cohort import Cohort

    cohort = simulate(500, 10, n_strata=3, seed=9)
    assert isinstance(cohort, Cohort)
    np.testing.assert_array_equal(cohort.beta_true, simulate_arrays(500, 10, n_strata=3, seed=9)[3])


@pytest.mark.parametrize("n_strata, baseline_sd", [(1, 0.0), (1000, 1.0)])
def test_cox_fit_recovers_beta(n_strata, baseline_sd):
    import engine

    cohort = simulate(20000, 50, n_strata=n_strata, baseline_sd=baseline_sd, seed=10)
    res = engine.fit(cohort, model="cox", ties="breslow")
    coef = res.coef.to_numpy()
    assert res.converged
    assert np.corrcoef(coef, cohort.beta_true)[0, 1] > 0.9
    assert np.max(np.abs(coef - cohort.beta_true)) < 0.5
