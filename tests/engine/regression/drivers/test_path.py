"""engine.path: every point is the fit at its lambda, the path and its deviance ratio equal
scikit-survival's Coxnet (Breslow, L1) and statsmodels' McFadden R^2 for logistic regression,
lambda_max is the edge of the all-zero fit, and cross-validation walks the same grid."""
import numpy as np
import pytest

import engine


def _cohort():
    return engine.simulate(300, 8, density=0.4, seed=12)


def test_every_point_is_the_fit_at_its_lambda():
    cohort = _cohort()
    p = engine.path(cohort, grid=6, tol=1e-12)
    assert np.all(np.diff(p.lambdas) < 0) and p.lambdas[0] == p.lambda_max
    for lam, row in p.coef.iterrows():
        direct = engine.fit(cohort, penalty=engine.L1(lam), tol=1e-12)
        np.testing.assert_allclose(row, direct.coef, rtol=1e-7, atol=1e-9)
        assert p.loglik[p.lambdas == lam][0] == pytest.approx(direct.loglik, rel=1e-10)
    assert p.df[0] == 0 and p.df[-1] > 0 and p.dev_ratio[0] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(p.dev_ratio) >= -1e-10) and p.converged.all()


def test_lambda_max_is_the_edge_of_the_all_zero_fit():
    cohort = _cohort()
    top = engine.path(cohort, grid=2).lambda_max
    assert not engine.fit(cohort, penalty=engine.L1(top * 1.0001)).coef.any()
    assert engine.fit(cohort, penalty=engine.L1(top * 0.99)).coef.any()


def test_path_and_deviance_ratio_equal_scikit_survival_coxnet():
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.util import Surv

    cohort = _cohort()
    p = engine.path(cohort, grid=5, tol=1e-12)
    y = Surv.from_arrays(np.asarray(cohort.event, bool), np.asarray(cohort.time))
    ref = CoxnetSurvivalAnalysis(l1_ratio=1.0, alphas=p.lambdas / cohort.n, normalize=False,
                                 tol=1e-12, max_iter=1_000_000).fit(cohort.X.toarray(), y)
    np.testing.assert_allclose(p.coef.to_numpy(), ref.coef_.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p.dev_ratio, ref.deviance_ratio_, rtol=1e-5, atol=1e-6)


def test_logistic_deviance_ratio_is_mcfadden_r2():
    import statsmodels.api as sm

    df = engine.datasets.load_rossi()
    cohort = engine.Cohort.from_frame(df, time="week", event="arrest",
                                      covariates=["fin", "age", "prio", "wexp"])
    p = engine.path(cohort, model="logistic", grid=[1e-9], tol=1e-12)
    X = sm.add_constant(df[["fin", "age", "prio", "wexp"]].to_numpy(float))
    ref = sm.Logit(df["arrest"].to_numpy(), X).fit(disp=0, tol=1e-12)
    assert p.dev_ratio[0] == pytest.approx(ref.prsquared, rel=1e-7)
    assert p.loglik[0] == pytest.approx(ref.llf, rel=1e-9)


def test_cross_validation_walks_the_path_grid():
    cohort = _cohort()
    cv = engine.cross_validate(cohort, folds=3, grid=4, seed=0)
    p = engine.path(cohort, grid=4)
    np.testing.assert_allclose(cv.curve["lambda"], p.lambdas, rtol=1e-12)
    assert cv.lambda_max == pytest.approx(p.lambda_max, rel=1e-12)


def test_progress_cancel_and_bad_arguments():
    import threading

    seen = []
    engine.path(_cohort(), grid=3, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    stop = threading.Event()
    stop.set()
    with pytest.raises(engine.Cancelled):
        engine.path(_cohort(), grid=3, cancel=stop)
    for kwargs, match in (({"penalty": "l3"}, "penalty"), ({"grid": 1}, "grid"),
                          ({"grid": [0.0]}, "grid"), ({"model": "x"}, "model")):
        with pytest.raises(ValueError, match=match):
            engine.path(_cohort(), **kwargs)
