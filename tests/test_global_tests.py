"""FitResult.global_tests() and .concordance(): R's summary(coxph) on rossi, lifelines' LR test
and concordance, statsmodels' score and Wald statistics, scikit-survival's Harrell's C with
strata and ties."""
import numpy as np
import pytest

import engine

COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def rossi_fit(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    return engine.fit(cohort, ties="efron", tol=1e-12)


def test_rossi_tests_equal_r_summary_coxph(rossi_fit):
    """R: Likelihood ratio test=33.27 on 7 df, Wald test=32.11, Score (logrank) test=33.53;
    Concordance=0.64."""
    t = rossi_fit.global_tests()
    assert t.loc["likelihood ratio", "statistic"] == pytest.approx(33.27, abs=0.005)
    assert t.loc["wald", "statistic"] == pytest.approx(32.11, abs=0.005)
    assert t.loc["score", "statistic"] == pytest.approx(33.53, abs=0.005)
    assert (t["df"] == 7).all()
    assert rossi_fit.concordance().c == pytest.approx(0.64, abs=0.005)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_tests_equal_lifelines_and_statsmodels(rossi, ties):
    import statsmodels.api as sm
    from lifelines import CoxPHFitter

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    res = engine.fit(cohort, ties=ties, tol=1e-12)
    t = res.global_tests()
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
        assert res.concordance().c == pytest.approx(cph.concordance_index_, rel=1e-12)


def test_logistic_tests_against_statsmodels(rossi):
    import statsmodels.api as sm

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                      covariates=["fin", "age", "prio"])
    t = engine.fit(cohort, model="logistic", tol=1e-12).global_tests()
    X = sm.add_constant(rossi[["fin", "age", "prio"]].to_numpy(float))
    ref = sm.Logit(rossi["arrest"].to_numpy(), X).fit(disp=0, tol=1e-12)
    assert t.loc["likelihood ratio", "statistic"] == pytest.approx(ref.llr, rel=1e-7)
    assert t.loc["likelihood ratio", "p"] == pytest.approx(ref.llr_pvalue, rel=1e-6)
    assert (t["df"] == 3).all()


def test_concordance_with_strata_ties_and_weights_equals_the_pair_definition():
    from sksurv.metrics import concordance_index_censored

    rng = np.random.default_rng(4)
    n = 300
    time = rng.integers(1, 30, n).astype(float)          # many tied times
    event = rng.random(n) < 0.6
    eta = np.round(rng.normal(size=n), 1)                  # many tied scores
    strata = rng.integers(0, 3, n)
    w = rng.integers(1, 4, n).astype(float)
    got = engine.concordance.harrell(time, event, eta, np.ones(n), strata)
    num = den = 0.0
    for s in range(3):
        m = strata == s
        c, con, dis, tie, _ = concordance_index_censored(event[m], time[m], eta[m])
        num += con + 0.5 * tie
        den += con + dis + tie
    assert got.c == pytest.approx(num / den, rel=1e-12)
    # weights: a pair counts w_i w_j, as the rows repeated
    weighted = engine.concordance.harrell(time, event, eta, w, strata)
    rows = np.repeat(np.arange(n), w.astype(int))
    rep = engine.concordance.harrell(time[rows], event[rows], eta[rows], np.ones(rows.size),
                                     strata[rows])
    # copies of one row share its time and status, so they are never comparable to each other
    assert weighted.c == pytest.approx(rep.c, rel=1e-12)


def test_refusals_are_clear(rossi):
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    with pytest.raises(ValueError, match="unpenalised fit"):
        engine.fit(cohort, penalty=engine.L2(1.0)).global_tests()
    heart = engine.datasets.load_stanford_heart()
    tv = engine.Cohort.from_frame(heart, time="stop", event="event", start="start", id="id",
                                  covariates=["age", "surgery"])
    with pytest.raises(ValueError, match="one row per subject"):
        engine.fit(tv).concordance()


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
    assert t["df"] == 5
    assert t["statistic"] == pytest.approx(2 * (big.loglik - small.loglik), rel=1e-12)
    assert t["p"] == pytest.approx(stats.chi2.sf(t["statistic"], 5), rel=1e-12)
    split = fit(["fin", "age"], cut_points={"fin": [26.0]})
    t = engine.lr_test(small, split)
    assert t["df"] == 1 and t["statistic"] >= 0
    with pytest.raises(ValueError, match="not nested"):
        engine.lr_test(fit(["prio"]), small)
    with pytest.raises(ValueError, match="same subjects"):
        engine.lr_test(small, engine.fit(engine.Cohort.from_frame(
            rossi.iloc[:300], time="week", event="arrest", covariates=COVARIATES)))
