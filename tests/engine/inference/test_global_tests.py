"""engine.global_tests against R's saved coxph output (aml: tests/doaml.Rout.save; ovarian and
lung: tests/Examples/survival-Ex.Rout.save), lifelines and statsmodels."""
import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from lifelines.datasets import load_lung
from statsmodels.duration.hazard_regression import PHReg

import engine
from r_survival_data import AML, OVARIAN


@pytest.mark.parametrize("ties, lr, p, z", [("breslow", 3.3, 0.06945, 1.765),
                                            ("efron", 3.38, 0.06581, 1.788)])
def test_aml_against_R(ties, lr, p, z):
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    tests = engine.global_tests(engine.fit(cohort, ties=ties)).table
    assert round(tests.loc["likelihood ratio", "statistic"], 2 if ties == "efron" else 1) == lr
    assert tests.loc["likelihood ratio", "p"] == pytest.approx(p, abs=5e-6)
    assert np.sqrt(tests.loc["wald", "statistic"]) == pytest.approx(z, abs=5e-4)


def test_score_test_against_R_and_the_logrank():
    # coxph(Surv(futime, fustat) ~ rx, ovarian, ties="breslow"): sctest 1.063 (no tied times,
    # so it is survdiff's 1.06274)
    cohort = engine.Cohort.from_frame(OVARIAN, "futime", "fustat", covariates=["rx"])
    tests = engine.global_tests(engine.fit(cohort, ties="breslow")).table
    assert round(tests.loc["score", "statistic"], 3) == 1.063
    assert tests.loc["score", "statistic"] == pytest.approx(
        engine.logrank_test(cohort, "rx").statistic, rel=1e-10)
    # coxph(Surv(time, status) ~ factor(pat.karno) + strata(inst), lung): 21.368 on 7 df
    lung = load_lung().dropna(subset=["inst", "pat.karno"])
    lung = lung.assign(karno=lung["pat.karno"].astype(int).astype(str))
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["karno"],
                                      strata="inst")
    tests = engine.global_tests(engine.fit(cohort, ties="efron")).table
    assert round(tests.loc["score", "statistic"], 3) == 21.368
    assert tests.loc["score", "df"] == 7


def test_rossi_against_lifelines_and_statsmodels(rossi):
    names = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names)
    res = engine.fit(cohort, ties="efron")
    tests = engine.global_tests(res).table
    cph = CoxPHFitter().fit(rossi, "week", "arrest")
    lr = cph.log_likelihood_ratio_test()
    assert tests.loc["likelihood ratio", "statistic"] == pytest.approx(lr.test_statistic,
                                                                       rel=1e-6)
    beta = cph.params_[names].to_numpy()
    wald = beta @ np.linalg.solve(cph.variance_matrix_.loc[names, names].to_numpy(), beta)
    assert tests.loc["wald", "statistic"] == pytest.approx(wald, rel=1e-6)
    model = PHReg(rossi["week"], rossi[names].to_numpy(float), status=rossi["arrest"],
                  ties="efron")
    u0, h0 = model.score(np.zeros(7)), model.hessian(np.zeros(7))
    assert tests.loc["score", "statistic"] == pytest.approx(u0 @ np.linalg.solve(-h0, u0),
                                                            rel=1e-9)
    assert (tests["df"] == 7).all()


COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def rossi_fit(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    return engine.fit(cohort, ties="efron", tol=1e-12)


def test_rossi_tests_equal_r_summary_coxph(rossi_fit):
    """R: Likelihood ratio test=33.27 on 7 df, Wald test=32.11, Score (logrank) test=33.53;
    Concordance=0.64."""
    t = engine.global_tests(rossi_fit).table
    assert t.loc["likelihood ratio", "statistic"] == pytest.approx(33.27, abs=0.005)
    assert t.loc["wald", "statistic"] == pytest.approx(32.11, abs=0.005)
    assert t.loc["score", "statistic"] == pytest.approx(33.53, abs=0.005)
    assert (t["df"] == 7).all()
    assert engine.concordance(rossi_fit)["concordance"] == pytest.approx(0.64, abs=0.005)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_tests_equal_lifelines_and_statsmodels(rossi, ties):
    import statsmodels.api as sm
    from lifelines import CoxPHFitter

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    res = engine.fit(cohort, ties=ties, tol=1e-12)
    t = engine.global_tests(res).table
    X = rossi[COVARIATES].to_numpy(float)
    ph = sm.PHReg(rossi["week"].to_numpy(float), X, status=rossi["arrest"].to_numpy(),
                  ties=ties)
    zero = np.zeros(len(COVARIATES))
    u = ph.score(zero)
    score = float(u @ np.linalg.solve(-ph.hessian(zero), u))
    b = res.coef.to_numpy()
    wald = float(b @ -ph.hessian(b) @ b)
    assert t.loc["score", "statistic"] == pytest.approx(score, rel=1e-8)
    assert t.loc["wald", "statistic"] == pytest.approx(wald, rel=1e-8)
    lr = 2 * (ph.loglike(b) - ph.loglike(zero))
    assert t.loc["likelihood ratio", "statistic"] == pytest.approx(lr, rel=1e-8)
    if ties == "efron":
        cph = CoxPHFitter().fit(rossi, "week", "arrest")
        assert t.loc["likelihood ratio", "statistic"] == pytest.approx(
            cph.log_likelihood_ratio_test().test_statistic, rel=1e-6)
        assert engine.concordance(res)["concordance"] == pytest.approx(cph.concordance_index_, rel=1e-12)


def test_logistic_tests_against_statsmodels(rossi):
    import statsmodels.api as sm

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                      covariates=["fin", "age", "prio"])
    t = engine.global_tests(engine.fit(cohort, model="logistic", tol=1e-12)).table
    X = sm.add_constant(rossi[["fin", "age", "prio"]].to_numpy(float))
    ref = sm.Logit(rossi["arrest"].to_numpy(), X).fit(disp=0, tol=1e-12)
    assert t.loc["likelihood ratio", "statistic"] == pytest.approx(ref.llr, rel=1e-7)
    assert t.loc["likelihood ratio", "p"] == pytest.approx(ref.llr_pvalue, rel=1e-6)
    assert (t["df"] == 3).all()
    # the slopes' tests with the intercept profiled out (statsmodels' wald_test: 23.89; the
    # score test at the intercept-only fit: 26.23), not the slopes' information block alone
    wald = ref.wald_test(np.eye(4)[1:], scalar=True).statistic
    assert t.loc["wald", "statistic"] == pytest.approx(wald, rel=1e-7)
    null = sm.Logit(rossi["arrest"].to_numpy(), X[:, :1]).fit(disp=0, tol=1e-12)
    model = sm.Logit(rossi["arrest"].to_numpy(), X)
    at = np.r_[null.params, 0.0, 0.0, 0.0]
    u = model.score(at)
    assert t.loc["score", "statistic"] == pytest.approx(
        u @ np.linalg.solve(-model.hessian(at), u), rel=1e-7)


def test_refusals_are_clear(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    with pytest.raises(ValueError, match="unpenalised fit"):
        engine.global_tests(engine.fit(cohort, penalty=engine.L2(1.0)))
    with pytest.raises(ValueError, match="pseudo-likelihood"):
        bmt = engine.datasets.load_bmtcrr()
        engine.global_tests(engine.fit(engine.Cohort.from_frame(
            bmt, time="ftime", event="Status", covariates=["Age"], competing_risks=True),
            model="fine_gray"))


def test_fit_keeps_its_cohort_for_the_checks(rossi):
    """engine.ph_test(res), residuals(res), concordance(res): the fit's own cohort by default,
    the same numbers as with the cohort passed."""
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    res = engine.fit(cohort, ties="efron")
    pd.testing.assert_frame_equal(engine.ph_test(res).table, engine.ph_test(res, cohort).table)
    pd.testing.assert_series_equal(engine.concordance(res), engine.concordance(res, cohort))
    np.testing.assert_array_equal(engine.residuals(res, kind="deviance"),
                                  engine.residuals(res, "deviance", cohort))


def test_lr_test_of_a_cut_point_model_and_of_added_covariates(rossi):
    """2 (l_big - l_small) on the difference in coefficients; the cut-point split of fin into
    two periods against the plain fin, and the full model against fin + age (R's anova)."""
    from scipy import stats

    def fit(covariates, **kw):
        cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                          covariates=covariates)
        return engine.fit(cohort, ties="efron", tol=1e-12, **kw)

    small, big = fit(["fin", "age"]), fit(COVARIATES)
    t = engine.lr_test(small, big)
    assert t.df == 5
    assert t.statistic == pytest.approx(2 * (big.loglik - small.loglik), rel=1e-12)
    assert t.p == pytest.approx(stats.chi2.sf(t.statistic, 5), rel=1e-12)
    assert t.table["loglik"].tolist() == [small.loglik, big.loglik]
    assert t.table["coefficients"].tolist() == [2, 7]
    split = fit(["fin", "age"], cut_points={"fin": [26.0]})
    t = engine.lr_test(small, split)
    assert t.df == 1 and t.statistic >= 0
    with pytest.raises(ValueError, match="not nested"):
        engine.lr_test(fit(["prio"]), small)
    with pytest.raises(ValueError, match="same subjects"):
        engine.lr_test(small, engine.fit(engine.Cohort.from_frame(
            rossi.iloc[:300], time="week", event="arrest", covariates=COVARIATES)))


@pytest.mark.parametrize("case", ["weights", "cluster"])
def test_robust_fits_wald_and_robust_score_equal_r(rossi, case):
    """Where the fit reports the robust variance, R's coxph tests with it: the Wald test reads
    the sandwich and a robust score test is added (R 4.2.2, survival 3.5-3):
        rossi$w <- 0.5 + ((seq_len(nrow(rossi)) - 1) %% 7) / 4
        rossi$site <- (seq_len(nrow(rossi)) - 1) %% 25
        f1 <- coxph(Surv(week, arrest) ~ fin + age + prio, rossi, weights = w, ties = "efron")
        f2 <- coxph(Surv(week, arrest) ~ fin + age + prio, rossi, cluster = site,
                    ties = "breslow")
        summary(f)$logtest, f$wald.test, f$score, f$rscore"""
    df = rossi.assign(w=0.5 + (np.arange(len(rossi)) % 7) / 4, site=np.arange(len(rossi)) % 25)
    names = ["fin", "age", "prio"]
    if case == "weights":
        res = engine.fit(engine.Cohort.from_frame(df, "week", "arrest", covariates=names,
                                                  weights="w"), ties="efron", tol=1e-12)
        want = [22.4454161468, 12.1041247083, 21.5770826978, 12.9729474446]
    else:
        res = engine.fit(engine.Cohort.from_frame(df, "week", "arrest", covariates=names),
                         ties="breslow", tol=1e-12, cluster=df["site"])
        want = [28.9015580016, 21.9215774570, 28.8870667683, 12.4341073649]
    tests = engine.global_tests(res)
    assert res.variance == "robust" and "independent rows" in tests.spec["note"]
    np.testing.assert_allclose(
        tests.table.loc[["likelihood ratio", "wald", "score", "robust score"], "statistic"],
        want, rtol=1e-7)
