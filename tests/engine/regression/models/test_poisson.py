"""Poisson regression (engine.fit(model="poisson")): events on person-time with a log offset,
against R 4.2.2's glm (tests/data/r_poisson.R, to 15 digits: rossi, the piecewise-exponential
model on follow-up split at weeks 20 and 40, whole-number weights) and statsmodels' Poisson GLM
(every solver, the robust sandwich by row and by cluster, cause-specific rates, cut points);
L1 fits by their optimality (KKT) conditions; the path's deviance."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import SpecificationWarning

import engine
from r_printed import data_frame, sections
from rossi_episodes import survsplit

R = sections("r_poisson.Rout")
SOLVERS = ["auto", "ccd", "newton", "prox_newton"]


def _as_r(res, label, rtol=1e-7):
    want = data_frame(R[label])
    assert list(res.coef.index) == ["(intercept)", *want["term"][1:]]
    np.testing.assert_allclose(res.coef.to_numpy(), want["coef"], rtol=rtol)
    np.testing.assert_allclose(res.se.to_numpy(), want["se"], rtol=rtol)
    fit = data_frame(R[f"{label} loglik"])
    assert res.loglik == pytest.approx(fit["loglik"].iloc[0], rel=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
def test_rossi_as_R_glm(rossi, solver):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    res = engine.fit(cohort, model="poisson", solver=solver, tol=1e-12)
    assert res.variance == "model" and res.spec["cause"] is None
    _as_r(res, "rossi")
    assert "irr" in res.summary and res.summary.loc["fin", "irr"] == pytest.approx(
        np.exp(res.coef["fin"]), rel=1e-15)


def test_global_tests_as_statsmodels(rossi):
    """The likelihood-ratio test against the intercept-only model and the Wald test of the
    slopes (the intercept profiled out), as statsmodels' GLM gives them."""
    covariates = ["fin", "age", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=covariates)
    table = engine.global_tests(engine.fit(cohort, model="poisson", tol=1e-12)).table
    full = _glm(rossi, covariates)
    null = sm.GLM(rossi["arrest"], np.ones((len(rossi), 1)), family=sm.families.Poisson(),
                  exposure=rossi["week"]).fit(tol=1e-13)
    assert table.loc["likelihood ratio", "statistic"] == pytest.approx(
        2 * (full.llf - null.llf), rel=1e-9)
    model_based = sm.GLM(rossi["arrest"], sm.add_constant(rossi[covariates].astype(float)),
                         family=sm.families.Poisson(), exposure=rossi["week"]).fit(tol=1e-13)
    wald = model_based.wald_test(np.eye(4)[1:], scalar=True)
    assert table.loc["wald", "statistic"] == pytest.approx(wald.statistic, rel=1e-7)


def test_piecewise_exponential_as_R(rossi):
    """Follow-up split at weeks 20 and 40 (R's survSplit), a rate per band: (start, stop]
    rows whose person-time adds up per subject."""
    split = survsplit(rossi.assign(id=np.arange(len(rossi))), [20, 40])
    split["b2"], split["b3"] = (split["band"] == 2) * 1.0, (split["band"] == 3) * 1.0
    cohort = engine.Cohort.from_frame(split, "week", "arrest", start="start", id="id",
                                      covariates=["b2", "b3", "fin", "age", "prio"])
    _as_r(engine.fit(cohort, model="poisson", tol=1e-12), "rossi bands")


def test_bands_are_the_piecewise_exponential_model_as_R(rossi):
    """bands=[20, 40] splits follow-up there with a rate per band, as the survSplit rows and
    band dummies of tests/data/r_poisson.R: R's coefficients under the bands' names, the
    rows' person-time adding up, the band rates unpenalised under an L1 penalty."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    res = engine.fit(cohort, model="poisson", bands=[20, 40], tol=1e-12)
    want = data_frame(R["rossi bands"]).set_index("term")
    bands = {"b2": "follow-up (20, 40]", "b3": "follow-up > 40"}
    for term in want.index[1:]:
        name = bands.get(term, term)
        assert res.coef[name] == pytest.approx(want.loc[term, "coef"], rel=1e-7)
        assert res.se[name] == pytest.approx(want.loc[term, "se"], rel=1e-7)
    assert res.coef["(intercept)"] == pytest.approx(want.loc["(Intercept)", "coef"], rel=1e-7)
    assert res.loglik == pytest.approx(
        data_frame(R["rossi bands loglik"])["loglik"].iloc[0], rel=1e-12)
    assert res.spec["bands"] == [20.0, 40.0] and res.variance == "model"
    assert res.n == 432 and res.n_events == 114
    lasso = engine.fit(cohort, model="poisson", bands=[20, 40], penalty=engine.L1(1e4))
    assert not lasso.penalized[list(bands.values())].any()
    assert (lasso.coef[["fin", "age", "prio"]] == 0).all()


def test_rates_by_band_against_one_rate_as_R_anova(rossi):
    """The likelihood-ratio test of the banded fit against the fit without bands (rows cut
    differently) is R's anova of both on the survSplit rows; a fit with bands [20] nests in
    [20, 40]; bands that are not among the larger fit's are not nested."""
    text = (Path(__file__).resolve().parents[3] / "data" / "r_poisson.Rout").read_text()
    after = text.split("## rossi bands against none")[1].splitlines()
    df, deviance = next(line.split()[3:5] for line in after if line.startswith("2 "))
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    flat = engine.fit(cohort, model="poisson", tol=1e-12)
    banded = engine.fit(cohort, model="poisson", bands=[20, 40], tol=1e-12)
    test = engine.lr_test(flat, banded)
    assert test.df == int(df) and test.statistic == pytest.approx(float(deviance), rel=1e-9)
    one = engine.fit(cohort, model="poisson", bands=[20], tol=1e-12)
    both = engine.lr_test(flat, one).statistic + engine.lr_test(one, banded).statistic
    assert both == pytest.approx(test.statistic, rel=1e-9)
    # cut points split the rows too: fin's rate ratio before and after week 20, against
    # statsmodels' two fits on the same split rows
    cut = engine.fit(cohort, model="poisson", cut_points={"fin": [20]}, tol=1e-12)
    split = survsplit(rossi, [20])
    split["fin_late"] = split["fin"] * (split["band"] == 2)
    offset = np.log(split["week"] - split["start"])
    llf = [sm.GLM(split["arrest"], sm.add_constant(split[c].astype(float)),
                  family=sm.families.Poisson(), offset=offset).fit(tol=1e-13).llf
           for c in (["fin", "age", "prio"], ["fin", "fin_late", "age", "prio"])]
    assert engine.lr_test(flat, cut).statistic == pytest.approx(2 * (llf[1] - llf[0]),
                                                                rel=1e-6)
    with pytest.raises(ValueError, match=r"bands \[30.0\] are not among the larger fit's"):
        engine.lr_test(engine.fit(cohort, model="poisson", bands=[30]), banded)
    with pytest.raises(ValueError, match="not nested"):
        engine.lr_test(banded, flat)


def test_bad_bands_are_named(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    with pytest.raises(ValueError, match="bands give a Poisson regression"):
        engine.fit(cohort, bands=[20])
    with pytest.raises(ValueError, match="increasing positive finite"):
        engine.fit(cohort, model="poisson", bands=[40, 20])
    with pytest.raises(ValueError, match="follow-up times"):
        engine.fit(cohort, model="poisson", bands="twenty")
    with pytest.raises(engine.CohortError, match=r"no follow-up reaches .*follow-up > 60"):
        engine.fit(cohort, model="poisson", bands=[20, 60])
    named = engine.Cohort.from_frame(rossi.assign(**{"follow-up > 20": rossi["fin"]}), "week",
                                     "arrest", covariates=["follow-up > 20"])
    with pytest.raises(engine.CohortError, match="already has columns named"):
        engine.fit(named, model="poisson", bands=[20])


def test_whole_number_weights_as_R(rossi):
    counted = rossi.assign(n=1 + (np.arange(1, len(rossi) + 1) % 3))
    cohort = engine.Cohort.from_frame(counted, "week", "arrest", weights="n",
                                      covariates=["fin", "age", "wexp"])
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    assert res.variance == "model"
    _as_r(res, "rossi weighted")


def _glm(frame, columns, weights=None, cluster=None, start=None):
    t = frame["week"] - (0 if start is None else frame[start])
    model = sm.GLM(frame["arrest"].to_numpy(), sm.add_constant(frame[columns].astype(float)),
                   family=sm.families.Poisson(), exposure=t.to_numpy(),
                   var_weights=None if weights is None else frame[weights].to_numpy())
    if cluster is None:
        return model.fit(cov_type="HC0", tol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecificationWarning)
        return model.fit(cov_type="cluster", tol=1e-13,
                         cov_kwds={"groups": cluster, "use_correction": False})


def test_sampling_weights_take_the_sandwich(rossi_r_weights):
    """Weights that are not counts: the robust variance by row, as statsmodels' HC0 with the
    weights as var_weights; with cluster=, its cluster sandwich."""
    r = rossi_r_weights
    covariates = ["fin", "age", "prio"]
    cohort = engine.Cohort.from_frame(r, "week", "arrest", weights="w", covariates=covariates)
    res = engine.fit(cohort, model="poisson", tol=1e-12)
    ref = _glm(r, covariates, weights="w")
    assert res.variance == "robust"
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params, rtol=1e-7)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse, rtol=1e-7)
    cluster = r["prio"].clip(upper=10).to_numpy()
    clustered = engine.fit(cohort, model="poisson", cluster=cluster, tol=1e-12)
    np.testing.assert_allclose(clustered.se.to_numpy(),
                               _glm(r, covariates, "w", cluster).bse, rtol=1e-7)


def test_cause_specific_rates():
    """bmtcrr: the rate of cause 2 (relapse), cause 1 ending person-time; its bootstrap draws
    count cause 2's events."""
    frame = engine.datasets.load_bmtcrr()
    frame = frame.assign(male=(frame["Sex"] == "M") * 1.0, all_=(frame["D"] == "ALL") * 1.0)
    cohort = engine.Cohort.from_frame(frame, "ftime", "Status", covariates=["male", "all_"],
                                      competing_risks=True)
    res = engine.fit(cohort, model="poisson", cause=2, tol=1e-12)
    assert res.spec["cause"] == 2
    ref = sm.GLM((frame["Status"] == 2).to_numpy(), sm.add_constant(frame[["male", "all_"]]),
                 family=sm.families.Poisson(), exposure=frame["ftime"].to_numpy()).fit(tol=1e-13)
    np.testing.assert_allclose(res.coef.to_numpy(), ref.params, rtol=1e-7)
    np.testing.assert_allclose(res.se.to_numpy(), ref.bse, rtol=1e-7)
    boot = engine.bootstrap(cohort, model="poisson", cause=2, replicates=4, seed=1)
    assert np.isfinite(np.asarray(boot.replicates, float)).all()


def test_time_varying_effect_by_cut_points(rossi):
    """A time-varying effect by cut points: the fit on its (start, stop] pieces as
    statsmodels' on survSplit's rows with one column per interval."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    res = engine.fit(cohort, model="poisson", cut_points={"fin": [20]}, tol=1e-12)
    split = survsplit(rossi, [20])
    split["fin[0,20)"] = split["fin"] * (split["band"] == 1)
    split["fin[20,inf)"] = split["fin"] * (split["band"] == 2)
    ref = _glm(split, ["fin[0,20)", "fin[20,inf)", "age"], start="start")
    got = res.coef[["(intercept)", "fin[0,20)", "fin[20,inf)", "age"]]
    np.testing.assert_allclose(got.to_numpy(), ref.params, rtol=1e-7)


def test_l1_solution_meets_the_kkt_conditions(rossi):
    """At the L1 solution the gradient of the log-likelihood (numpy here) is 0 on the
    intercept, lam sign(b) on the non-zero coefficients and at most lam in size on the zeros."""
    covariates = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=covariates)
    lam = 4.0
    res = engine.fit(cohort, model="poisson", penalty=engine.L1(lam), tol=1e-13)
    b = res.coef.to_numpy()
    X = np.column_stack([np.ones(len(rossi)), rossi[covariates].to_numpy(float)])
    mu = rossi["week"].to_numpy() * np.exp(X @ b)
    g = X.T @ (rossi["arrest"].to_numpy() - mu)
    assert abs(g[0]) < 1e-7
    nonzero = np.flatnonzero(b[1:] != 0) + 1
    assert 0 < nonzero.size < len(covariates)
    np.testing.assert_allclose(g[nonzero], lam * np.sign(b[nonzero]), rtol=1e-6)
    zero = np.flatnonzero(b[1:] == 0) + 1
    assert np.all(np.abs(g[zero]) <= lam * (1 + 1e-9))


def test_path_deviance_reaches_R_glm(rossi):
    """At a negligible penalty the path's deviance ratio is glmnet's 1 - D / D_0 with R's glm
    deviance D = 2 (l_sat - l), the saturated Poisson log-likelihood l_sat being minus the
    events, and D_0 the deviance at lambda_max (the intercept alone)."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    path = engine.path(cohort, model="poisson", grid=[1e-9], tol=1e-12)
    want = data_frame(R["rossi loglik"])
    assert path.loglik[-1] == pytest.approx(want["loglik"].iloc[0], rel=1e-10)
    l_sat = -float(rossi["arrest"].sum())
    rate = rossi["arrest"].sum() / rossi["week"].sum()              # the intercept alone
    l_0 = float(np.sum(rossi["arrest"] * np.log(rate * rossi["week"])) - rossi["arrest"].sum())
    deviance = want["deviance"].iloc[0]
    assert 2 * (l_sat - path.loglik[-1]) == pytest.approx(deviance, rel=1e-9)
    assert path.dev_ratio[-1] == pytest.approx(1 - deviance / (2 * (l_sat - l_0)), rel=1e-8)


def test_bad_input_is_named(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"],
                                      strata=["race"])
    with pytest.raises(engine.CohortError, match="enter the strata column as a covariate"):
        engine.fit(cohort, model="poisson")
    bmt = engine.Cohort.from_frame(engine.datasets.load_bmtcrr(), "ftime", "Status",
                                   covariates=[], competing_risks=True)
    with pytest.raises(ValueError, match="tv_route='strata' makes each interval a stratum"):
        engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"]),
                   model="poisson", cut_points={"fin": [20]}, tv_route="strata")
    with pytest.raises(engine.CohortError, match=r"cause 3 is not an event code .*\[1, 2\]"):
        engine.fit(bmt, model="poisson", cause=3)
    named = engine.Cohort.from_frame(rossi.rename(columns={"fin": "(intercept)"}), "week",
                                     "arrest", covariates=["(intercept)"])
    with pytest.raises(engine.CohortError, match="the model adds that column"):
        engine.fit(named, model="poisson")
