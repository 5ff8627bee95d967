"""engine.sample (horseshoe probit and flat-prior probit): the public call, its binary-outcome
cohort, reproducibility of the Philox-keyed chains, the flat-prior posterior against
statsmodels' Probit MLE, truth recovery on the paper's synthetic design, and PosteriorResult's
summary and exports against brute-force definitions."""
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import engine
from engine.bayes.chain import run_chain
from engine.bayes.horseshoe_probit import HorseshoeProbit

with warnings.catch_warnings():    # ArviZ 0.x warns once a day about its coming 1.0 refactor
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

PAPER_BETA = [1.3, 4.0, -1.0, 1.6, 5.0, -2.0]


def _probit_data(n, p, beta, seed, intercept=0.0):
    """The paper's design (sec. 6.1): X ~ N(0, 1), y = 1(intercept + X beta + e > 0)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    b = np.zeros(p)
    b[: len(beta)] = beta
    y = (intercept + X @ b + rng.normal(size=n) > 0).astype(int)
    return X, y


def _cohort(X, y):
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    return engine.Cohort.from_frame(frame, time=None, event="y")


@pytest.fixture(scope="module")
def small():
    X, y = _probit_data(300, 5, [1.0, -0.8], seed=4, intercept=0.3)
    return _cohort(X, y)


@pytest.fixture(scope="module")
def small_post(small):
    return engine.sample(small, draws=400, burn_in=100, chains=2, seed=9)


def test_binary_outcome_cohort_without_time_for_sample_and_logistic(small):
    assert small.binary_outcome and small.source["time"] is None
    post = engine.sample(small, draws=20, burn_in=5, chains=1, seed=0)
    assert post.names == ["(intercept)", *small.names]
    assert engine.fit(small, model="logistic").converged
    with pytest.raises(ValueError, match="time=None"):
        engine.fit(small, model="cox")


@pytest.mark.parametrize("bad, match", [
    ({"y": [0] * 6}, "is 0 in every row; a binary outcome needs both 0s and 1s"),
    ({"y": [0, 1, 2, 0, 1, 1]}, "codes other than 0/1"),
    ({"y": [0, 1, np.nan, 0, 1, 1]}, "missing or infinite"),
])
def test_binary_outcome_errors_name_column_rows_and_fix(bad, match):
    frame = pd.DataFrame({"x": [1.0, 2, 3, 4, 5, 7], **bad})
    with pytest.raises(engine.CohortError, match=match):
        engine.Cohort.from_frame(frame, time=None, event="y")


def test_sample_refuses_what_it_cannot_do(small):
    with pytest.raises(ValueError, match="model="):
        engine.sample(small, model="logit")
    with pytest.raises(ValueError, match="backend=.gpu."):
        engine.sample(small, backend="gpu")
    with pytest.raises(ValueError, match="draws"):
        engine.sample(small, draws=0)
    survival = engine.Cohort.from_arrays(time=[1.0, 2, 3, 4], event=[1, 2, 0, 1],
                                         X=np.eye(4)[:, :2], competing_risks=True)
    with pytest.raises(engine.CohortError, match="0/1 outcome"):
        engine.sample(survival)
    weighted = engine.Cohort.from_arrays(time=None, event=[1, 0, 0, 1],
                                         X=np.arange(8.0).reshape(4, 2) ** 2, weights=np.ones(4))
    with pytest.raises(ValueError, match="case weights"):
        engine.sample(weighted)


def test_chains_are_reproducible_and_independent(small, small_post):
    again = engine.sample(small, draws=400, burn_in=100, chains=2, seed=9)
    np.testing.assert_array_equal(small_post.draws, again.draws)
    assert not np.allclose(small_post.draws[0], small_post.draws[1])
    one = engine.sample(small, draws=400, burn_in=100, chains=1, seed=9)
    np.testing.assert_array_equal(one.draws[0], small_post.draws[0])   # chain 0 is chain 0
    other = engine.sample(small, draws=400, burn_in=100, chains=1, seed=10)
    assert not np.allclose(other.draws[0], small_post.draws[0])


def test_thinning_keeps_every_thin_th_iteration(small):
    full = engine.sample(small, draws=60, burn_in=10, chains=1, seed=2)
    thinned = engine.sample(small, draws=20, burn_in=10, chains=1, seed=2, thin=3)
    np.testing.assert_array_equal(thinned.draws[0], full.draws[0, ::3])


def test_threads_give_the_serial_draws(small):
    serial = engine.sample(small, draws=50, burn_in=10, chains=2, seed=3, parallel=None)
    threaded = engine.sample(small, draws=50, burn_in=10, chains=2, seed=3, parallel="threads")
    np.testing.assert_array_equal(serial.draws, threaded.draws)
    assert threaded.spec["parallel"] == "threads"


@pytest.mark.slow
def test_processes_give_the_serial_draws(small):
    serial = engine.sample(small, draws=50, burn_in=10, chains=2, seed=3, parallel=None)
    pooled = engine.sample(small, draws=50, burn_in=10, chains=2, seed=3,
                           parallel="processes")
    np.testing.assert_array_equal(serial.draws, pooled.draws)
    assert pooled.spec["parallel"] == "processes"


def test_progress_and_cancel(small):
    seen = []
    engine.sample(small, draws=30, burn_in=10, chains=2, seed=1,
                  progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (80, 80) and all(a <= b for (a, _), (b, _) in zip(seen, seen[1:]))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(engine.Cancelled):
        engine.sample(small, draws=30, chains=1, cancel=cancel)


def test_summary_against_brute_force_definitions(small_post):
    s = small_post.summary
    flat = small_post.draws.reshape(-1, small_post.draws.shape[2])
    np.testing.assert_allclose(s["mean"], flat.mean(0), rtol=1e-12)
    np.testing.assert_allclose(s["sd"], flat.std(0, ddof=1), rtol=1e-12)
    for column, q in [("q2.5", 0.025), ("q5", 0.05), ("median", 0.5), ("q95", 0.95),
                      ("q97.5", 0.975)]:
        np.testing.assert_allclose(s[column], np.quantile(flat, q, axis=0), rtol=1e-12)
    positive = (flat > 0).mean(0)
    np.testing.assert_allclose(s["p_sign"], np.maximum(positive, 1 - positive), atol=1e-12)
    np.testing.assert_array_equal(s["shrunk"], (s["q5"] <= 0) & (s["q95"] >= 0))
    idata = small_post.to_inference_data()
    np.testing.assert_allclose(s["r_hat"], az.rhat(idata)["beta"].values, rtol=1e-12)
    np.testing.assert_allclose(s["ess"], az.ess(idata)["beta"].values, rtol=1e-12)
    np.testing.assert_allclose(s["ess_per_s"], s["ess"] / small_post.timings["sampling"])
    assert np.isnan(s.loc["(intercept)", "shrinkage"])
    assert s["shrinkage"].drop("(intercept)").between(0, 1).all()
    # x0 and x1 carry signal, x2..x4 are null: the nulls are shrunk harder
    kappa = s["shrinkage"]
    assert kappa[["x2", "x3", "x4"]].min() > kappa[["x0", "x1"]].max()
    assert not s.loc["x0", "shrunk"] and s.loc[["x2", "x3", "x4"], "shrunk"].all()


def test_exports_round_trip(small_post, tmp_path):
    small_post.to_csv(tmp_path / "draws.csv")
    frame = pd.read_csv(tmp_path / "draws.csv")
    assert list(frame.columns) == ["chain", "draw", *small_post.names, "tau"]
    np.testing.assert_allclose(frame[small_post.names].to_numpy(),
                               small_post.draws.reshape(-1, len(small_post.names)))
    small_post.to_netcdf(tmp_path / "post.nc")
    back = az.from_netcdf(tmp_path / "post.nc")
    np.testing.assert_allclose(back.posterior["beta"].values, small_post.draws)
    assert back.posterior["beta"].coords["coefficient"].values.tolist() == small_post.names
    assert back.posterior.attrs["model"] == "horseshoe_probit"


@pytest.mark.slow  # a long chain against the MLE
def test_flat_prior_posterior_matches_statsmodels_probit_mle():
    """Large N: the flat-prior posterior is N(MLE, inverse information) to O(1/N) (Bernstein-von
    Mises), so the posterior mean is the Probit MLE within Monte Carlo error and the posterior
    sd its standard error."""
    X, y = _probit_data(10000, 3, [0.5, -0.25, 0.1], seed=1, intercept=-0.2)
    post = engine.sample(_cohort(X, y), model="probit", draws=1000, burn_in=200, chains=2,
                         seed=4)
    mle = sm.Probit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-12)
    s = post.summary
    bias_allowance = 0.05 * np.asarray(mle.bse)          # O(1/N) mean-mode gap, generous
    assert np.all(np.abs(s["mean"] - mle.params) < 4 * s["mcse_mean"] + bias_allowance)
    np.testing.assert_allclose(s["sd"], mle.bse, rtol=0.1)


@pytest.mark.slow  # two long chains
def test_float32_samples_the_float64_posterior():
    X, y = _probit_data(3000, 8, [1.0, -0.5], seed=12, intercept=0.2)
    cohort = _cohort(X, y)
    a = engine.sample(cohort, draws=1000, burn_in=200, chains=2, seed=1)
    b = engine.sample(cohort, draws=1000, burn_in=200, chains=2, seed=2, precision="float32")
    assert b.draws.dtype == np.float64 and b.spec["precision"] == "float32"
    se = np.hypot(a.summary["mcse_mean"], b.summary["mcse_mean"])
    assert np.all(np.abs(a.summary["mean"] - b.summary["mean"]) < 4 * se)


@pytest.mark.slow  # two long chains
def test_standardising_does_not_change_the_flat_prior_posterior():
    X, y = _probit_data(2000, 2, [0.8, -0.4], seed=6)
    X = X * [3.0, 0.2] + [50.0, -1.0]                 # covariates in odd units
    cohort = _cohort(X, y)
    a = engine.sample(cohort, model="probit", draws=1500, burn_in=100, chains=2, seed=1)
    b = engine.sample(cohort, model="probit", draws=1500, burn_in=100, chains=2, seed=2,
                      standardize=False)
    se = np.hypot(a.summary["mcse_mean"], b.summary["mcse_mean"])
    assert np.all(np.abs(a.summary["mean"] - b.summary["mean"]) < 4 * se)
    np.testing.assert_allclose(a.spec["scale"], X.std(0))
    np.testing.assert_allclose(a.spec["center"], X.mean(0))


def test_bcm_route_and_cholesky_route_sample_the_same_posterior():
    """p > N: the Bhattacharya-Chakraborty-Mallick draw and the Cholesky draw of beta | . are
    exact for the same law, so both chains estimate the same posterior."""
    X, y = _probit_data(30, 40, [2.0, -1.5], seed=8)
    means, mcses = [], []
    for route, seed in (("bcm", 1), ("cholesky", 2)):
        gibbs = HorseshoeProbit(X, y, shrunk=np.ones(40, bool), route=route)
        runs = [run_chain(gibbs, c, seed, 3000, 300, 1, np.ones(40)) for c in range(2)]
        draws = np.stack([r["beta"] for r in runs])
        ref = az.convert_to_dataset(draws[:, :, :3])
        means.append(draws[:, :, :3].mean((0, 1)))
        mcses.append(az.mcse(ref)["x"].values)
    assert np.all(np.abs(means[0] - means[1]) < 4 * np.hypot(*mcses))
    with pytest.warns(engine.MonotoneLikelihoodWarning, match="separate"):   # p > N: always
        post = engine.sample(_cohort(X, y), draws=50, burn_in=10, chains=1, seed=0)
    assert post.spec["beta_route"] == "bcm"


@pytest.mark.slow
def test_truth_recovery_on_the_paper_design():
    """Sec. 6.1's design, beta = (1.3, 4, -1, 1.6, 5, -2, 0, ...), at N = 2,000, p = 50 (the
    paper's N = 10,000 is for the benchmark): the six signals inside their 95% intervals and
    the 44 nulls' posterior means near 0. The interval ends are Monte Carlo estimates from
    slowly mixing chains (Albert-Chib on strong signals): each is allowed 3 of its Monte Carlo
    standard errors (ArviZ)."""
    X, y = _probit_data(2000, 50, PAPER_BETA, seed=0)
    post = engine.sample(_cohort(X, y), draws=1500, burn_in=500, chains=2, seed=0,
                         intercept=False, standardize=False)
    s = post.summary
    truth = np.r_[PAPER_BETA, np.zeros(44)]
    signal = s.iloc[:6]
    beta = post.to_inference_data().posterior[["beta"]]
    mcse = {q: az.mcse(beta, method="quantile", prob=q)["beta"].values[:6]
            for q in (0.025, 0.975)}
    assert np.all(signal["q2.5"] - 3 * mcse[0.025] < truth[:6])
    assert np.all(truth[:6] < signal["q97.5"] + 3 * mcse[0.975])
    assert np.abs(s["mean"].iloc[6:]).max() < 0.15
    assert s["shrunk"].iloc[6:].mean() > 0.9 and not s["shrunk"].iloc[:6].any()


def test_binary_outcome_cohort_from_parquet(tmp_path):
    X, y = _probit_data(50, 2, [1.0], seed=1)
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(y=y)
    frame.to_parquet(tmp_path / "d.parquet")
    cohort = engine.Cohort.from_parquet(tmp_path / "d.parquet", time=None, event="y",
                                        covariates=["a"])
    assert cohort.binary_outcome and cohort.names == ["a"] and cohort.n == 50


@pytest.mark.slow  # two chains, one in a thread
def test_factorising_in_a_second_thread_gives_the_same_chain():
    """threads=2 computes step (ii)'s Cholesky and the last rows' z beside the first rows' z:
    same numbers, same chain, on both routes."""
    X, y = _probit_data(400, 12, [1.0, -0.5], seed=3)
    for route in ("cholesky", "bcm"):
        chains = [run_chain(HorseshoeProbit(X, y, np.ones(12, bool), route=route,
                                            threads=threads), 0, 5, 40, 10, 1,
                            X.var(0))["beta"] for threads in (1, 2)]
        np.testing.assert_array_equal(chains[0], chains[1])
