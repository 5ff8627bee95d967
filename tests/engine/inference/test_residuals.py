"""engine.residuals and engine.information against R survival's saved output (aml, Breslow:
tests/doaml.Rout.save, 8 digits), lifelines' CoxPHFitter (Efron) and the split-episode
identity."""
import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from statsmodels.duration.hazard_regression import PHReg

import engine
from r_survival_data import AML


# resid(coxph(Surv(time, status) ~ x, aml, method='breslow'), type=...)
R_MARTINGALE = [0.86225539, 0.79200985, -0.20799015, 0.74818869, 0.65652976, -0.39796610,
                0.45424957, 0.25475051, -1.05400917, -0.55400917, -1.55400917, 0.87844483,
                0.87844483, 0.74006941, 0.74006941, 0.57677292, -0.51373647, 0.15162716,
                0.01702219, -0.14897252, -0.56448258, -1.15185244, -1.60340676]
R_SCORE = [-0.546856248, -0.492501830, 0.141063944, -0.479907930, -0.447416819, 0.268453990,
           -0.235908976, -0.072655945, 0.640826596, 0.640826596, 0.640826596, 0.237767767,
           0.237767767, 0.232585063, 0.232585063, 0.203878910, -0.165307985, 0.044923326,
           0.007079721, -0.039651990, -0.181184547, -0.395076175, -0.472116894]


def test_aml_breslow_against_R():
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    res = engine.fit(cohort, ties="breslow")
    np.testing.assert_allclose(engine.residuals(res), R_MARTINGALE, atol=5e-9)
    np.testing.assert_allclose(engine.residuals(res, "score").iloc[:, 0], R_SCORE,
                               atol=5e-10)
    # R: se(coef) 0.5122 = sqrt(1 / information)
    assert 1 / np.sqrt(engine.information(res, cohort).iloc[0, 0]) == pytest.approx(
        0.5122, abs=5e-5)


NAMES = ["fin", "age", "prio", "mar"]


def test_breslow_score_residuals_against_statsmodels(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="breslow")
    theirs = PHReg(rossi["week"], rossi[NAMES].to_numpy(float), status=rossi["arrest"],
                   ties="breslow").fit()
    np.testing.assert_allclose(engine.residuals(res, "score"), theirs.score_residuals,
                               rtol=1e-7, atol=1e-9)


def _efron_by_definition(time, event, X, beta):
    """R's coxmart.c / coxscore2.c written out: at each event time with m tied deaths, m
    terms k = 0..m-1 with denominator S0 - k/m D0; rows that survive the time are exposed to
    every term, the dying rows to (1 - k/m) of each."""
    n, p = X.shape
    r = np.exp(X @ beta)
    mart, score = event.astype(float), np.zeros((n, p))
    for t in np.unique(time[event == 1]):
        at_risk = time >= t
        dying = at_risk & (time == t) & (event == 1)
        m = dying.sum()
        s0, d0 = r[at_risk].sum(), r[dying].sum()
        s1, d1 = r[at_risk] @ X[at_risk], r[dying] @ X[dying]
        mean_of_means = np.zeros(p)
        for k in range(m):
            denom = s0 - k / m * d0
            hazard = 1.0 / denom                       # (m deaths / m terms) / denominator
            xbar = (s1 - k / m * d1) / denom
            mean_of_means += xbar / m
            for i in np.flatnonzero(at_risk):
                share = (1 - k / m) if dying[i] else 1.0
                mart[i] -= r[i] * share * hazard
                score[i] -= r[i] * share * hazard * (X[i] - xbar)
        score[dying] += X[dying] - mean_of_means
    return mart, score


def test_efron_against_definition(rossi):
    data = rossi.iloc[:150]                           # ties enough, loops short
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    mart, score = _efron_by_definition(data["week"].to_numpy(float), data["arrest"].to_numpy(),
                                       data[NAMES].to_numpy(float), res.coef.to_numpy())
    np.testing.assert_allclose(engine.residuals(res), mart, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(engine.residuals(res, "score"), score, rtol=1e-9,
                               atol=1e-11)
    delta = data["arrest"].to_numpy()
    deviance = np.sign(mart) * np.sqrt(-2 * (mart + np.where(delta == 1, np.log(
        np.where(delta == 1, 1 - mart, 1.0)), 0.0)))
    np.testing.assert_allclose(engine.residuals(res, "deviance"), deviance,
                               rtol=1e-10, atol=1e-12)


def test_dfbeta_of_a_released_fit(rossi):
    """A fit whose problem was released (a GPU fit's device memory freed) has no live
    information of its own: dfbeta reads the PH test's, the same numbers."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    live = engine.residuals(res, "dfbeta")
    res.release()
    np.testing.assert_allclose(engine.residuals(res, "dfbeta"), live, rtol=1e-9, atol=1e-15)


def test_information_and_dfbeta(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    cph = CoxPHFitter().fit(rossi[["week", "arrest", *NAMES]], "week", "arrest")
    info = engine.information(res, cohort)
    np.testing.assert_allclose(np.linalg.inv(info), cph.variance_matrix_.to_numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(np.linalg.inv(info))), res.se, rtol=1e-8)
    dfbeta = engine.residuals(res, "dfbeta")
    score = engine.residuals(res, "score")
    # w L I^-1 with the fit's own I^-1 (R's fit$var), equal to the PH test's information's;
    # formed as the score residuals of X I^-1 e_j, the same sums in another order
    np.testing.assert_allclose(dfbeta, score.to_numpy() @ res.cov_model.to_numpy(), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(dfbeta, score.to_numpy() @ np.linalg.inv(info), rtol=1e-9,
                               atol=1e-15)
    # to first order, the change in beta when a row is left out
    for i in (0, 7):
        without = engine.fit(engine.Cohort.from_frame(rossi.drop(index=i), "week", "arrest",
                                                      covariates=NAMES), ties="efron")
        change = res.coef - without.coef
        np.testing.assert_allclose(dfbeta.iloc[i], change, rtol=0.05, atol=2e-3)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_split_episodes_sum_to_the_subject(rossi, ties):
    """A subject's martingale and score residuals are the sums over its episodes."""
    rows = []
    for i, r in rossi.iterrows():
        bounds = [0, *[c for c in (12, 30) if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "fin": r["fin"], "age": r["age"],
                         "arrest": int(r["arrest"] and b == r["week"])})
    split = pd.DataFrame(rows)
    plain = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    episodes = engine.Cohort.from_frame(split, "stop", "arrest", covariates=["fin", "age"],
                                        start="start", id="id")
    a = engine.fit(plain, ties=ties)
    b = engine.fit(episodes, ties=ties)
    for kind in ("martingale", "score"):
        whole = engine.residuals(a, kind)
        parts = engine.residuals(b, kind).groupby(split["id"].to_numpy()).sum()
        np.testing.assert_allclose(np.asarray(parts).squeeze(), np.asarray(whole).squeeze(),
                                   atol=1e-7)


def test_bad_kind(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    with pytest.raises(ValueError, match="kind"):
        engine.residuals(engine.fit(cohort), "pearson")


def test_chosen_columns_and_blocks_give_the_whole_table(rossi, monkeypatch):
    """Score and dfbeta residuals of chosen coefficients are those columns of the whole
    table, and a block of one covariate at a time (a wide design at 10^6 rows) gives the
    same table as one block of all."""
    from engine.inference import residuals as module
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort, ties="efron")
    whole = {kind: engine.residuals(res, kind) for kind in ("score", "dfbeta")}
    for kind, table in whole.items():
        chosen = engine.residuals(res, kind, columns=["prio", "fin"])
        assert list(chosen.columns) == ["prio", "fin"]
        np.testing.assert_allclose(chosen, table[["prio", "fin"]], rtol=1e-12, atol=1e-15)
        pd.testing.assert_series_equal(engine.residuals(res, kind, columns="age")["age"],
                                       table["age"], rtol=1e-12, atol=1e-15)
    monkeypatch.setattr(module, "BLOCK_BYTES", 8 * module.WORK_ARRAYS * len(rossi))
    assert [b.size for b in module._blocks(np.arange(4), len(rossi))] == [1, 1, 1, 1]
    for kind, table in whole.items():
        np.testing.assert_allclose(engine.residuals(res, kind), table, rtol=1e-12,
                                   atol=1e-15)


def test_unknown_columns_and_a_table_too_big_for_memory(rossi, monkeypatch):
    from engine.inference import residuals as module
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=NAMES)
    res = engine.fit(cohort)
    with pytest.raises(ValueError, match=r"\['race'\] are not coefficients.*'prio'"):
        engine.residuals(res, "dfbeta", columns=["fin", "race"])
    monkeypatch.setattr(module, "available_bytes", lambda: 10_000)
    with pytest.raises(MemoryError, match=r"dfbeta residuals of 4 coefficients over 432 rows "
                                          r"need about .* MB, more than the 0 MB free.*columns=\[\.\.\.\]"):
        engine.residuals(res, "dfbeta")
    with pytest.raises(MemoryError, match="partial residuals of 4 terms"):
        engine.residuals(res, "partial")
    # martingale residuals make no table: not refused
    assert engine.residuals(res).size == len(rossi)
