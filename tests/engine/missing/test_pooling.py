"""engine.pool: Rubin's rules, Barnard and Rubin's degrees of freedom and the D1 test, each
against its definition computed here from the m fits' coefficients and covariances."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import engine

NAMES = ["age", "sex", "ph.ecog", "wt.loss"]


@pytest.fixture(scope="module")
def fits():
    lung = engine.datasets.load_lung()[["time", "status"] + NAMES + ["ph.karno", "meal.cal"]]
    imp = engine.impute(lung, "time", "status", method="mice", m=5, burn_in=3, skip=1, seed=3)
    return [engine.fit(engine.Cohort.from_frame(imp.dataset(k), "time", "status", NAMES))
            for k in range(imp.m)]


def _rubin(fits, df_complete=np.inf):
    m = len(fits)
    Q = np.array([f.coef.to_numpy() for f in fits])
    U = np.array([f.cov.to_numpy() for f in fits])
    qbar, W = Q.mean(0), U.mean(0)
    B = sum(np.outer(q - qbar, q - qbar) for q in Q) / (m - 1)
    T = W + (1 + 1 / m) * B
    lam = (1 + 1 / m) * np.diag(B) / np.diag(T)
    df = (m - 1) / lam ** 2
    if np.isfinite(df_complete):
        obs = (df_complete + 1) / (df_complete + 3) * df_complete * (1 - lam)
        df = df * obs / (df + obs)
    return qbar, W, B, T, lam, df


@pytest.mark.parametrize("df_complete", [None, 150.0])
def test_rubins_rules_by_their_definition(fits, df_complete):
    pooled = engine.pool(fits, df_complete=df_complete)
    qbar, W, B, T, lam, df = _rubin(fits, np.inf if df_complete is None else df_complete)
    np.testing.assert_allclose(pooled.coef, qbar, rtol=1e-12)
    np.testing.assert_allclose(pooled.within, W, rtol=1e-12)
    np.testing.assert_allclose(pooled.between, B, rtol=1e-10)
    np.testing.assert_allclose(pooled.cov, T, rtol=1e-12)
    table = pooled.summary
    se = np.sqrt(np.diag(T))
    np.testing.assert_allclose(table["se"], se, rtol=1e-12)
    np.testing.assert_allclose(table["lambda"], lam, rtol=1e-10)
    np.testing.assert_allclose(table["df"], df, rtol=1e-10)
    riv = lam / (1 - lam)
    np.testing.assert_allclose(table["riv"], riv, rtol=1e-9)
    np.testing.assert_allclose(table["fmi"], (riv + 2 / (df + 3)) / (1 + riv), rtol=1e-9)
    np.testing.assert_allclose(table["p"], 2 * stats.t.sf(np.abs(qbar / se), df), rtol=1e-9)
    np.testing.assert_allclose(table["hr_upper"],
                               np.exp(qbar + stats.t.ppf(0.975, df) * se), rtol=1e-12)
    assert table.attrs["m"] == 5


def test_d1_by_its_definition_and_one_coefficient_is_t_squared(fits):
    pooled = engine.pool(fits)
    qbar, W, B, _, _, _ = _rubin(fits)
    cols = [NAMES.index("ph.ecog"), NAMES.index("wt.loss")]
    q, Ws, Bs = qbar[cols], W[np.ix_(cols, cols)], B[np.ix_(cols, cols)]
    r1 = (1 + 1 / 5) * np.trace(Bs @ np.linalg.inv(Ws)) / 2
    d1 = q @ np.linalg.inv(Ws) @ q / (2 * (1 + r1))
    t = 2 * 4
    v = 4 + (t - 4) * (1 + (1 - 2 / t) / r1) ** 2
    test = pooled.wald_test(["ph.ecog", "wt.loss"])
    assert test.statistic == pytest.approx(d1, rel=1e-10)
    assert test.table.loc["D1", "df2"] == pytest.approx(v, rel=1e-10)
    assert test.p == pytest.approx(stats.f.sf(d1, 2, v), rel=1e-9)
    one = pooled.wald_test("sex")
    assert one.statistic == pytest.approx(pooled.summary.loc["sex", "t"] ** 2, rel=1e-10)


def test_identical_fits_have_no_between_variance(fits):
    pooled = engine.pool([fits[0]] * 3)
    table = pooled.summary
    np.testing.assert_allclose(table["se"], fits[0].se, rtol=1e-12)
    assert (table["riv"] == 0).all() and np.isinf(table["df"]).all()
    np.testing.assert_allclose(table["p"], fits[0].summary["p"], rtol=1e-9)
    assert np.isinf(pooled.wald_test(NAMES).table.loc["D1", "df2"])


def test_robust_variances_pool_as_reported():
    rossi = engine.datasets.load_rossi()
    names = ["fin", "age", "prio"]
    fits = [engine.fit(engine.Cohort.from_frame(rossi.assign(w=1.0 + 0.1 * k * rossi["fin"]),
                                                "week", "arrest", names, weights="w"),
                       variance="robust") for k in range(3)]
    pooled = engine.pool(fits)
    np.testing.assert_allclose(pooled.within, np.mean([f.cov_robust for f in fits], axis=0),
                               rtol=1e-12)


def test_bad_fits_are_refused(fits):
    with pytest.raises(ValueError, match="at least 2"):
        engine.pool(fits[:1])
    lung = engine.datasets.load_lung().dropna(subset=NAMES)
    other = engine.fit(engine.Cohort.from_frame(lung, "time", "status", NAMES[:3]))
    with pytest.raises(ValueError, match="same covariates"):
        engine.pool([fits[0], other])
    penalised = engine.fit(engine.Cohort.from_frame(lung, "time", "status", NAMES),
                           penalty=engine.L2(1.0))
    with pytest.raises(ValueError, match="penalised"):
        engine.pool([fits[0], penalised])
    with pytest.raises(ValueError, match="df_complete must be positive"):
        engine.pool(fits, df_complete=0)
    with pytest.raises(ValueError, match="not coefficients"):
        engine.pool(fits).wald_test(["bmi"])
    assert isinstance(engine.pool(fits).summary, pd.DataFrame)
