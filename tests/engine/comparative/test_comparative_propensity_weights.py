"""Propensity-score weights on any cohort (engine.comparative.propensity_weights).

Oracles: the values WeightIt and cobalt print for the public lalonde data (WeightIt's README, its
vignette "Using WeightIt to Estimate Balancing Weights" and its trim() help page: to their
printed digits), statsmodels' Logit / GLM for the PS model, lifelines' weighted Cox fit, and
brute-force definitions written out below (to 1e-10)."""
import warnings
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import engine
from engine.comparative import propensity_weights

LALONDE = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "lalonde.csv")
ALL = ["age", "educ", "race", "married", "nodegree", "re74", "re75"]


def lalonde_design(covariates=ALL):
    """The PS model's columns as R's glm builds them (race against its first level, black)."""
    X = LALONDE[[c for c in covariates if c != "race"]].astype(float)
    if "race" in covariates:
        X = X.assign(race_hispan=(LALONDE.race == "hispan") * 1.0,
                     race_white=(LALONDE.race == "white") * 1.0)
    return X


def statsmodels_ps(covariates=ALL, freq_weights=None):
    X = sm.add_constant(lalonde_design(covariates))
    model = sm.GLM(LALONDE.treat, X, family=sm.families.Binomial(), freq_weights=freq_weights)
    return model.fit(tol=1e-14).predict(X).to_numpy()


def diff(res, name, when):
    return float(res.balance.set_index("covariate").loc[name, f"diff_{when}"])


# -- WeightIt / cobalt's printed values --------------------------------------------------------

def test_ate_equals_weightit_readme():
    """weightit(treat ~ age + educ + nodegree + married + race + re74 + re75, estimand = "ATE"),
    bal.tab(W, un = TRUE) and summary(W) as WeightIt's README prints them."""
    res = propensity_weights(LALONDE, "treat", ALL, estimand="ATE")
    t = res.treatment == 1
    for value, printed in [(res.weights[t].min(), 1.1721), (res.weights[t].max(), 40.0773),
                           (res.weights[~t].min(), 1.0092), (res.weights[~t].max(), 4.7432)]:
        assert value == pytest.approx(printed, abs=5e-5)
    assert res.ess.loc["after", "control"] == pytest.approx(329.008, abs=5e-4)
    assert res.ess.loc["after", "treated"] == pytest.approx(58.327, abs=5e-4)
    assert res.ess.loc["before"].tolist() == [429.0, 185.0]
    printed = {"(propensity score)": (1.7569, 0.1360), "age": (-0.2419, -0.1676),
               "educ": (0.0448, 0.1296), "nodegree": (0.1114, -0.0547),
               "married": (-0.3236, -0.0944), "race[hispan]": (-0.0827, 0.0047),
               "race[white]": (-0.5577, -0.0546), "re74": (-0.5958, -0.2740),
               "re75": (-0.2870, -0.1579)}
    for name, (un, adj) in printed.items():
        assert diff(res, name, "before") == pytest.approx(un, abs=5e-5), name
        assert diff(res, name, "after") == pytest.approx(adj, abs=5e-5), name
    kinds = res.balance.set_index("covariate")["type"]
    assert kinds["(propensity score)"] == "distance" and kinds["married"] == "binary"
    assert kinds["age"] == "continuous"


def test_att_equals_weightit_vignette():
    """The ATT weights of the vignette: control weights 0.009 to 3.743, ESS 99.82, and its
    bal.tab (standardised by the treated arm's SD)."""
    res = propensity_weights(LALONDE, "treat", ALL, estimand="ATT")
    t = res.treatment == 1
    assert np.all(res.weights[t] == 1.0)
    assert res.weights[~t].min() == pytest.approx(0.009, abs=5e-4)
    assert res.weights[~t].max() == pytest.approx(3.743, abs=5e-4)
    assert res.ess.loc["after", "control"] == pytest.approx(99.82, abs=5e-3)
    un = {"age": -0.309, "educ": 0.055, "race[hispan]": -0.083, "race[white]": -0.558,
          "married": -0.324, "nodegree": 0.111, "re74": -0.721, "re75": -0.290}
    adj = {"(propensity score)": -0.021, "age": 0.119, "educ": -0.028, "race[hispan]": 0.000,
           "race[white]": 0.002, "married": 0.019, "nodegree": 0.018, "re74": -0.002,
           "re75": 0.011}
    for name, value in un.items():
        assert diff(res, name, "before") == pytest.approx(value, abs=5e-4), name
    for name, value in adj.items():
        assert diff(res, name, "after") == pytest.approx(value, abs=5e-4), name
    assert res.balance.attrs["sd_denominator"] == "treated"


def test_truncation_equals_weightit_trim():
    """trim(W, at = .9) on the ATT weights of treat ~ age + educ + married + nodegree + re74:
    only the comparators' weights are truncated (control max 2.044 -> 0.941, ESS 255.99 ->
    270.58)."""
    covariates = ["age", "educ", "married", "nodegree", "re74"]
    res = propensity_weights(LALONDE, "treat", covariates, estimand="ATT")
    cut = propensity_weights(LALONDE, "treat", covariates, estimand="ATT", truncate=0.9)
    c = res.treatment == 0
    assert res.weights[c].max() == pytest.approx(2.044, abs=5e-4)
    assert res.ess.loc["after", "control"] == pytest.approx(255.99, abs=5e-3)
    assert cut.weights[c].max() == pytest.approx(0.941, abs=5e-4)
    assert cut.ess.loc["after", "control"] == pytest.approx(270.58, abs=5e-3)
    assert np.all(cut.weights[~c] == 1.0)


# -- statsmodels and brute-force definitions ---------------------------------------------------

def test_ps_equals_statsmodels_logit():
    res = propensity_weights(LALONDE, "treat", ALL)
    np.testing.assert_allclose(res.ps, statsmodels_ps(), rtol=1e-8)


@pytest.mark.parametrize("estimand", ["ATE", "ATT", "ATC", "ATO", "ATM"])
@pytest.mark.parametrize("stabilize", [False, True])
def test_weights_and_ess_equal_their_definitions(estimand, stabilize):
    # the ATC weights 1 / PS of the few treated like the comparators: one carries 11% of them
    with (pytest.warns(engine.DataWarning, match="extreme weights") if estimand == "ATC"
          else nullcontext()):
        res = propensity_weights(LALONDE, "treat", ALL, estimand=estimand, stabilize=stabilize)
    e, t = res.ps, res.treatment
    expected = []
    for ei, ti in zip(e, t):
        w = {"ATE": 1 / ei if ti else 1 / (1 - ei),
             "ATT": 1.0 if ti else ei / (1 - ei),
             "ATC": (1 - ei) / ei if ti else 1.0,
             "ATO": 1 - ei if ti else ei,
             "ATM": min(ei, 1 - ei) / (ei if ti else 1 - ei)}[estimand]
        if stabilize:
            w *= np.mean(t == ti)
        expected.append(w)
    np.testing.assert_allclose(res.weights, expected, rtol=1e-12)
    for arm, name in [(0, "control"), (1, "treated")]:
        w = res.weights[t == arm]
        assert res.ess.loc["after", name] == pytest.approx(sum(w) ** 2 / sum(w * w), rel=1e-12)


def test_balance_equals_its_definition():
    """Weighted means; SD from the unweighted sample (n - 1), pooled for ATE; binary columns
    as raw differences, or standardised by sqrt(p (1 - p)) with binary="std"."""
    for binary in ("raw", "std"):
        res = propensity_weights(LALONDE, "treat", ALL, binary=binary)
        X = lalonde_design().rename(columns={"race_hispan": "race[hispan]",
                                             "race_white": "race[white]"})
        X.insert(0, "(propensity score)", res.ps)
        t, w = res.treatment == 1, res.weights
        table = res.balance.set_index("covariate")
        for name in X.columns:
            x = X[name].to_numpy()
            is_binary = set(np.unique(x)) <= {0.0, 1.0}
            m1, m0 = x[t].mean(), x[~t].mean()
            a1 = sum(wi * xi for wi, xi in zip(w[t], x[t])) / sum(w[t])
            a0 = sum(wi * xi for wi, xi in zip(w[~t], x[~t])) / sum(w[~t])
            if is_binary:
                v1, v0 = m1 * (1 - m1), m0 * (1 - m0)
            else:
                v1 = sum((xi - m1) ** 2 for xi in x[t]) / (t.sum() - 1)
                v0 = sum((xi - m0) ** 2 for xi in x[~t]) / ((~t).sum() - 1)
            sd = 1.0 if is_binary and binary == "raw" else np.sqrt((v1 + v0) / 2)
            assert table.loc[name, "mean_treated_after"] == pytest.approx(a1, rel=1e-10)
            assert table.loc[name, "mean_control_after"] == pytest.approx(a0, rel=1e-10)
            assert table.loc[name, "diff_before"] == pytest.approx((m1 - m0) / sd, rel=1e-10)
            assert table.loc[name, "diff_after"] == pytest.approx((a1 - a0) / sd, rel=1e-10,
                                                                  abs=1e-13)


def test_trim_gives_weight_zero_outside_overlap():
    res = propensity_weights(LALONDE, "treat", ALL, trim=0.1)
    outside = (res.ps < 0.1) | (res.ps > 0.9)
    assert outside.any() and np.array_equal(res.trimmed, outside)
    assert np.all(res.weights[outside] == 0.0)
    np.testing.assert_allclose(res.weights[~outside],
                               np.where(res.treatment == 1, 1 / res.ps, 1 / (1 - res.ps))[~outside],
                               rtol=1e-12)


def test_truncation_equals_type7_quantile_by_hand():
    res = propensity_weights(LALONDE, "treat", ALL, estimand="ATE")
    cut = propensity_weights(LALONDE, "treat", ALL, estimand="ATE", truncate=0.95)
    w = np.sort(res.weights)
    h = (w.size - 1) * 0.95                       # R's type 7: x[floor h] + frac (x[ceil] - ...)
    cap = w[int(h)] + (h - int(h)) * (w[int(h) + 1] - w[int(h)])
    np.testing.assert_allclose(cut.weights, np.minimum(res.weights, cap), rtol=1e-12)


def test_truncation_after_trimming_takes_the_quantile_of_the_persons_kept():
    trimmed = propensity_weights(LALONDE, "treat", ALL, trim=0.05)
    both = propensity_weights(LALONDE, "treat", ALL, trim=0.05, truncate=0.9)
    kept = ~trimmed.trimmed
    cap = np.quantile(trimmed.weights[kept], 0.9)
    np.testing.assert_allclose(both.weights[kept], np.minimum(trimmed.weights[kept], cap),
                               rtol=1e-12)
    assert np.all(both.weights[~kept] == 0.0)


def test_cross_validated_l1_equals_the_l1_fit_at_the_chosen_strength():
    """penalty="cv" hands the strength engine.cross_validate chooses to the L1 fit (which the
    test above checks against statsmodels)."""
    covariates = ["age", "educ", "married", "nodegree", "re74", "re75"]
    cv = propensity_weights(LALONDE, "treat", covariates, estimand="ATT", penalty="cv", folds=3)
    lam = cv.fit.penalty.lam
    ref = propensity_weights(LALONDE, "treat", covariates, estimand="ATT", penalty=engine.L1(lam))
    assert isinstance(cv.fit.penalty, engine.L1) and lam > 0
    np.testing.assert_allclose(cv.weights, ref.weights, rtol=1e-8)


def test_case_weights_enter_the_ps_model_and_the_weights():
    """Sampling weights: the PS model is the weighted MLE (statsmodels GLM with freq_weights),
    the weights are multiplied by them, the ESS before is Kish's of the case weights."""
    case = 1.0 + (np.arange(len(LALONDE)) % 3)
    df = LALONDE.assign(sw=case)
    res = propensity_weights(df, "treat", ALL, weights="sw")
    ps = statsmodels_ps(freq_weights=case)
    np.testing.assert_allclose(res.ps, ps, rtol=1e-8)
    t = res.treatment == 1
    np.testing.assert_allclose(res.weights, case * np.where(t, 1 / res.ps, 1 / (1 - res.ps)),
                               rtol=1e-12)
    c1 = case[t]
    assert res.ess.loc["before", "treated"] == pytest.approx(c1.sum() ** 2 / (c1 @ c1),
                                                              rel=1e-12)


def test_l1_ps_equals_statsmodels_l1_logit():
    lam = 20.0
    res = propensity_weights(LALONDE, "treat", ["age", "educ", "married", "nodegree"],
                             penalty=engine.L1(lam))
    X = sm.add_constant(lalonde_design(["age", "educ", "married", "nodegree"]))
    ref = sm.Logit(LALONDE.treat, X).fit_regularized(
        method="l1", alpha=np.r_[0.0, np.full(4, lam)], disp=0, acc=1e-12, trim_mode="off")
    np.testing.assert_allclose(res.fit.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6,
                               atol=1e-9)


# -- the weights on a cohort: a weighted Cox fit follows ---------------------------------------

ROSSI_PS = ["age", "race", "wexp", "mar", "paro", "prio"]


def test_weighted_cox_equals_lifelines():
    from lifelines import CoxPHFitter
    rossi = engine.datasets.load_rossi()
    pw = propensity_weights(rossi, "fin", ROSSI_PS)
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=["fin"])
    weighted = pw.weighted(cohort)
    assert weighted.source["weights"] == "propensity score weights (ATE)"
    res = engine.fit(weighted, ties="efron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # lifelines: non-integer weights
        ref = CoxPHFitter().fit(rossi[["week", "arrest", "fin"]].assign(w=pw.weights),
                                "week", "arrest", weights_col="w", robust=True)
    assert res.coef["fin"] == pytest.approx(ref.params_["fin"], rel=1e-6)


def test_weights_go_onto_episodes_by_id():
    """(start, stop] episodes of each subject take the subject's weight: the weighted Cox fit
    on the split data equals the fit on one row per subject."""
    rossi = engine.datasets.load_rossi().reset_index(drop=True).assign(
        pid=lambda d: np.arange(len(d)))
    pw = propensity_weights(rossi, "fin", ROSSI_PS, id="pid")
    first = rossi.assign(start=0.0, stop=np.minimum(rossi.week, 20.0),
                         event=np.where(rossi.week <= 20, rossi.arrest, 0))
    second = rossi[rossi.week > 20].assign(start=20.0, stop=lambda d: d.week,
                                           event=lambda d: d.arrest)
    episodes = pd.concat([first, second]).sort_values(["pid", "start"])
    split = engine.Cohort.from_frame(episodes, time="stop", event="event", start="start",
                                     id="pid", covariates=["fin", "prio"])
    whole = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=["fin", "prio"])
    a = engine.fit(pw.weighted(split), ties="efron")
    b = engine.fit(pw.weighted(whole), ties="efron")
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-8)


def test_a_cohort_is_accepted_as_the_data():
    rossi = engine.datasets.load_rossi()
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                      covariates=["fin", *ROSSI_PS])
    from_cohort = propensity_weights(cohort, "fin")
    from_frame = propensity_weights(rossi, "fin", ROSSI_PS)
    np.testing.assert_allclose(from_cohort.weights, from_frame.weights, rtol=1e-10)
    assert engine.propensity_weights is propensity_weights


# -- bad input ---------------------------------------------------------------------------------

def test_treatment_not_0_1_is_named_with_rows_and_fix():
    df = LALONDE.assign(treat=LALONDE.treat.where(LALONDE.index != 4, 2))
    with pytest.raises(engine.CohortError, match=r"'treat' \(treatment\) has 1 row\(s\) with "
                       r"values other than 0/1: row 4 = 2.*Code the treatment 1"):
        propensity_weights(df, "treat", ALL)
    with pytest.raises(engine.CohortError, match="treatment.*1 in every row"):
        propensity_weights(LALONDE[LALONDE.treat == 1], "treat", ALL)
    cohort = engine.Cohort.from_frame(engine.datasets.load_rossi(), time="week",
                                      event="arrest", covariates=["fin", "prio"])
    with pytest.raises(engine.CohortError, match=r"'prio' \(treatment\) has \d+ row\(s\) "
                       r"with values other than 0/1: row 1 = 3\.0"):
        propensity_weights(cohort, "prio")


def test_missing_covariates_are_named_or_dropped():
    df = LALONDE.copy()
    df.loc[[3, 10], "educ"] = np.nan
    with pytest.raises(engine.CohortError, match=r"'educ'.*2 row\(s\).*row 3"):
        propensity_weights(df, "treat", ALL)
    res = propensity_weights(df, "treat", ALL, missing="drop")
    assert np.all(res.weights[[3, 10]] == 0.0) and np.isnan(res.ps[[3, 10]]).all()
    assert np.isfinite(res.ps).sum() == len(df) - 2


def test_perfect_separation_is_refused_by_name():
    df = LALONDE.assign(marker=LALONDE.treat * 3.0 + 1.0)
    with pytest.raises(engine.CohortError, match=r"separates the arms perfectly.*'marker'"):
        propensity_weights(df, "treat", ["age", "marker"])


def test_extreme_weights_are_named_with_remedies():
    x = np.arange(100) / 10.0                     # treated above 5, but one at 0.3 (and
    treat = (x > 5).astype(int)                   # one comparator at 9): each has a PS far from
    treat[3], treat[90] = 1, 0                    # its arm's and a weight near 1 / PS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        propensity_weights(pd.DataFrame({"x": x, "treat": treat}), "treat", ["x"])
    messages = [str(w.message) for w in caught if w.category is engine.DataWarning]
    assert len(messages) == 2
    assert "extreme weights: 1 person(s) with 'treat' = 0 (rows [90])" in messages[0]
    assert "extreme weights: 1 person(s) with 'treat' = 1 (rows [3])" in messages[1]
    assert all("trim=0.05" in m and "estimand='ATO'" in m for m in messages)


def test_episodes_cohort_and_mismatched_rows_are_refused():
    rossi = engine.datasets.load_rossi()
    pw = propensity_weights(rossi, "fin", ROSSI_PS)
    with pytest.raises(engine.CohortError, match="cohort has 10 rows but the weights"):
        pw.weighted(engine.Cohort.from_frame(rossi.head(10), time="week", event="arrest",
                                             covariates=["prio"]))
    episodes = rossi.assign(start=0.0, pid=np.arange(len(rossi)))
    cohort = engine.Cohort.from_frame(episodes, time="week", event="arrest", start="start",
                                      id="pid", covariates=["fin", "prio"])
    with pytest.raises(engine.CohortError, match="one row per subject at baseline"):
        propensity_weights(cohort, "fin")
    with pytest.raises(ValueError, match="estimand must be one of"):
        propensity_weights(rossi, "fin", ROSSI_PS, estimand="ATX")


def test_weights_onto_a_cohort_are_checked():
    rossi = engine.datasets.load_rossi()
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=["fin"])
    with pytest.raises(engine.CohortError, match=r"'ps' \(weights\) has 1 row\(s\) with "
                       r"negative weights: row 3 = -1"):
        cohort.with_weights(np.r_[1.0, 1.0, -1.0, np.ones(cohort.n - 3)], "ps")
    with pytest.raises(engine.CohortError, match="432 rows but 3 weights"):
        cohort.with_weights(np.ones(3), "ps")
    pw = propensity_weights(rossi, "fin", ROSSI_PS)
    case_weighted = engine.Cohort.from_frame(rossi.assign(w=2.0), time="week", event="arrest",
                                             covariates=["fin"], weights="w")
    with pytest.raises(engine.CohortError, match="already carries case weights"):
        pw.weighted(case_weighted)


def test_a_ps_of_exactly_0_or_1_is_refused_or_trimmed():
    """An outlying covariate value drives one PS to 1.0 in floating point while the (L2
    penalised) model does not separate the arms: refused by row, unless trim= excludes it."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=300)
    treat = (rng.random(300) < 1 / (1 + np.exp(-x))).astype(int)
    x[7], treat[7] = 60.0, 1                      # logit about 60: expit is 1.0
    df = pd.DataFrame({"x": x, "treat": treat})
    with pytest.raises(engine.CohortError, match=r"a PS of 0 or 1 \(no overlap\): row 7 = 1\.0"):
        propensity_weights(df, "treat", ["x"], penalty=engine.L2(1.0))
    res = propensity_weights(df, "treat", ["x"], penalty=engine.L2(1.0), trim=0.01)
    assert res.trimmed[7] and res.weights[7] == 0.0 and np.all(np.isfinite(res.weights))
