"""engine.probit_mle against statsmodels' Probit, engine.autocorrelation against its definition
written out here, engine.per_sd against pandas' population SD: the numbers the app's Bayesian
page shows beside the posterior."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import engine

MEANS = ["mean radius", "mean texture", "mean perimeter", "mean area", "mean smoothness",
         "mean compactness", "mean concavity", "mean concave points", "mean symmetry",
         "mean fractal dimension"]


@pytest.fixture(scope="module")
def breast():
    return engine.datasets.load_breast_cancer()


def _cohort(frame, covariates, event="target_benign"):
    return engine.Cohort.from_frame(frame, time=None, event=event, covariates=covariates)


def test_probit_mle_against_statsmodels(breast):
    mle = engine.probit_mle(_cohort(breast, MEANS))
    ref = sm.Probit(breast["target_benign"], sm.add_constant(breast[MEANS])).fit(
        method="newton", maxiter=100, tol=1e-12, disp=0)
    np.testing.assert_allclose(mle.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(mle.se.to_numpy(), ref.bse.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(mle.summary["z"].to_numpy(), ref.tvalues.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(mle.summary["p"].to_numpy(), ref.pvalues.to_numpy(), rtol=1e-5)
    assert mle.loglik == pytest.approx(ref.llf, rel=1e-10)
    assert list(mle.coef.index) == ["(intercept)", *MEANS]


def test_probit_mle_without_intercept_against_statsmodels(breast):
    cols = ["mean radius", "mean texture"]
    mle = engine.probit_mle(_cohort(breast, cols), intercept=False)
    ref = sm.Probit(breast["target_benign"], breast[cols]).fit(method="newton", tol=1e-12,
                                                                disp=0)
    np.testing.assert_allclose(mle.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)


def test_probit_mle_refuses_separation_and_too_few_rows(breast):
    with pytest.raises(engine.CohortError, match="separate 'target_benign'"):
        engine.probit_mle(_cohort(breast, None))          # all 30 features separate it
    with pytest.raises(engine.CohortError, match="too few rows.*5 rows for 11 coefficients"):
        engine.probit_mle(_cohort(breast.iloc[[0, 1, 2, 19, 20]], MEANS))


def test_probit_mle_refuses_collinear_predictors():
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=50), rng.normal(size=50)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x1 + x2,
                          "y": (x1 + rng.normal(size=50) > 0).astype(int)})
    with pytest.raises(engine.CohortError, match="'y' are collinear"):
        engine.probit_mle(_cohort(frame, None, event="y"))


def _acf(x, k):
    x = x - x.mean()
    return np.sum(x[: len(x) - k] * x[k:]) / np.sum(x * x)


def test_autocorrelation_against_definition():
    rng = np.random.default_rng(3)
    e = rng.normal(size=(3, 400, 2))
    draws = e.copy()
    for t in range(1, 400):           # AR(1) chains, rho 0.8 and 0.3
        draws[:, t] = np.array([0.8, 0.3]) * draws[:, t - 1] + e[:, t]
    got = engine.autocorrelation(draws, max_lag=10)
    want = np.array([[np.mean([_acf(draws[c, :, j], k) for c in range(3)]) for j in range(2)]
                     for k in range(11)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(engine.autocorrelation(draws[:, :, 0], 3), want[:4, 0],
                               rtol=1e-10)
    with pytest.raises(ValueError, match="max_lag"):
        engine.autocorrelation(draws, max_lag=-1)


def test_per_sd_against_population_sd(breast):
    cohort = _cohort(breast, MEANS[:3])
    table = pd.DataFrame({"mean": [1.0, 2.0, 3.0, 4.0], "q5": [0.5, -1.0, 2.0, 3.0]},
                         index=["(intercept)", *MEANS[:3]])
    got = engine.per_sd(cohort, table)
    sd = breast[MEANS[:3]].std(ddof=0).to_numpy()
    assert list(got.index) == MEANS[:3]
    np.testing.assert_allclose(got["mean"], [2.0, 3.0, 4.0] * sd, rtol=1e-12)
    np.testing.assert_allclose(got["q5"], [-1.0, 2.0, 3.0] * sd, rtol=1e-12)
    np.testing.assert_allclose(engine.per_sd(cohort, table["mean"]), got["mean"], rtol=1e-12)
