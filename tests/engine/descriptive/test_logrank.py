"""engine.logrank_test against R survival's saved survdiff output, lifelines, statsmodels and the
definition written out here.

R values: survival package (Therneau), tests/cancer.Rout.save (lung by inst, rho = 0.5, printed
to 6 digits), tests/Examples/survival-Ex.Rout.save (lung, pat.karno + strata(inst)) and
tests/doaml.Rout.save (aml).
"""
import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_lung
from lifelines.statistics import logrank_test as lifelines_logrank
from lifelines.statistics import multivariate_logrank_test
from statsmodels.duration.survfunc import survdiff

import engine
from r_survival_data import AML


def test_aml_against_R():
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    test = engine.logrank_test(cohort, by="x")
    assert test.table["n"].tolist() == [11, 12]
    assert test.table["observed"].tolist() == [7, 11]
    np.testing.assert_allclose(test.table["expected"], [10.69, 7.31], atol=0.005)
    np.testing.assert_allclose(test.table["(O-E)^2/E"], [1.27, 1.86], atol=0.005)
    assert round(test.statistic, 1) == 3.4 and test.df == 1 and round(test.p, 2) == 0.07


def test_lung_by_inst_rho_half_against_R():
    # survdiff(Surv(time, status) ~ inst, lung, rho=.5), printed with digits=6
    lung = load_lung().dropna(subset=["inst"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["inst"])
    test = engine.logrank_test(cohort, by="inst", rho=0.5)
    r = {1: (36, 21.190058, 17.455181, 1.171232977), 2: (5, 3.173330, 1.964395, 0.860140808),
         3: (19, 10.663476, 11.958755, 0.200472362), 21: (13, 9.263733, 4.460746, 6.149354145),
         33: (2, 0.929177, 0.416202, 0.676682390)}
    for inst, (n, o, e, ov) in r.items():
        row = test.table.loc[f"inst={inst}"]
        assert row["n"] == n
        assert row["observed"] == pytest.approx(o, abs=5e-7)
        assert row["expected"] == pytest.approx(e, abs=5e-7)
        assert row["(O-E)^2/V"] == pytest.approx(ov, abs=5e-10)
    assert test.df == 17 and round(test.statistic, 1) == 15.1 and round(test.p, 4) == 0.5904


def test_lung_stratified_against_R():
    # survdiff(Surv(time, status) ~ pat.karno + strata(inst), lung): chisq = coxph's score
    # test, 21.368 on 7 df
    lung = load_lung().dropna(subset=["inst", "pat.karno"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["pat.karno"],
                                      strata="inst")
    test = engine.logrank_test(cohort, by="pat.karno", strata="inst")
    assert test.table["n"].tolist() == [2, 2, 4, 30, 41, 50, 60, 35]
    np.testing.assert_allclose(test.table["expected"],
                               [0.692, 1.099, 1.166, 16.298, 26.358, 41.938, 47.242, 26.207],
                               atol=5e-4)
    np.testing.assert_allclose(test.table["(O-E)^2/V"],
                               [0.15752, 0.00973, 7.45359, 9.57333, 1.14774, 0.60032, 3.23078,
                                1.44067], atol=5e-6)
    assert test.statistic == pytest.approx(21.368, abs=5e-4) and test.df == 7
    # without strata=, the cohort's own strata (R's strata() term), not an unstratified test
    pd.testing.assert_frame_equal(engine.logrank_test(cohort, by="pat.karno").table, test.table)


def test_a_stratified_cohorts_test_is_stratified_against_r(rossi):
    """R 4.2.2: survdiff(Surv(week, arrest) ~ fin + strata(race), rossi)$chisq = 4.0484966,
    against 3.8375695 unstratified."""
    plain = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    stratified = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], strata="race")
    fin = rossi["fin"].to_numpy()
    assert engine.logrank_test(stratified, by=fin).statistic == pytest.approx(4.0484966,
                                                                              rel=1e-7)
    assert engine.logrank_test(plain, by=fin).statistic == pytest.approx(3.8375695, rel=1e-7)


def test_two_groups_against_lifelines(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    a, b = rossi[rossi["fin"] == 0], rossi[rossi["fin"] == 1]
    for rho, gamma in ((0, 0), (1, 0), (0, 1), (1, 1), (0.5, 2)):
        mine = engine.logrank_test(cohort, by="fin", rho=rho, gamma=gamma)
        kw = {} if rho == gamma == 0 else {"weightings": "fleming-harrington", "p": rho,
                                            "q": gamma}
        theirs = lifelines_logrank(a["week"], b["week"], a["arrest"], b["arrest"], **kw)
        assert mine.statistic == pytest.approx(theirs.test_statistic, rel=1e-9)
        assert mine.p == pytest.approx(theirs.p_value, rel=1e-8)
        # with two groups the trend test is the test
        assert mine.trend_statistic == pytest.approx(mine.statistic, rel=1e-12)


@pytest.mark.parametrize("weighting, theirs", [("gehan", "wilcoxon"),
                                                ("tarone-ware", "tarone-ware")])
def test_gehan_breslow_and_tarone_ware_against_lifelines(rossi, weighting, theirs):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    a, b = rossi[rossi["fin"] == 0], rossi[rossi["fin"] == 1]
    mine = engine.logrank_test(cohort, by="fin", weighting=weighting)
    ref = lifelines_logrank(a["week"], b["week"], a["arrest"], b["arrest"], weightings=theirs)
    assert mine.statistic == pytest.approx(ref.test_statistic, rel=1e-9)
    assert mine.p == pytest.approx(ref.p_value, rel=1e-8)
    lung = load_lung().dropna(subset=["ph.ecog"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["ph.ecog"])
    mine = engine.logrank_test(cohort, by="ph.ecog", weighting=weighting)
    ref = multivariate_logrank_test(lung["time"], lung["ph.ecog"], lung["status"],
                                    weightings=theirs)
    assert mine.statistic == pytest.approx(ref.test_statistic, rel=1e-9)
    with pytest.raises(ValueError, match="weighting must be one of"):
        engine.logrank_test(cohort, by="ph.ecog", weighting="wilcoxon")


def test_several_groups_against_lifelines():
    lung = load_lung().dropna(subset=["ph.ecog"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["ph.ecog"])
    mine = engine.logrank_test(cohort, by="ph.ecog")
    theirs = multivariate_logrank_test(lung["time"], lung["ph.ecog"], lung["status"])
    assert mine.df == 3
    assert mine.statistic == pytest.approx(theirs.test_statistic, rel=1e-9)


def test_stratified_against_statsmodels(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"],
                                      strata="race")
    for weight_type, rho in ((None, 0.0), ("fh", 1.0)):
        mine = engine.logrank_test(cohort, by="fin", strata="race", rho=rho)
        kw = {} if weight_type is None else {"weight_type": "fh", "fh_p": rho}
        chisq, p = survdiff(rossi["week"], rossi["arrest"], rossi["fin"],
                            strata=rossi["race"], **kw)
        assert mine.statistic == pytest.approx(chisq, rel=1e-9)
        assert mine.p == pytest.approx(p, rel=1e-8)


def _trend_by_definition(time, event, group, scores):
    """Collett's test for trend: U = sum_g s_g (O_g - E_g), V = s' V s, by a loop over times."""
    levels = sorted(set(group))
    u, v = 0.0, 0.0
    for t in sorted(set(time[event == 1])):
        at_risk = time >= t
        n = at_risk.sum()
        d = ((time == t) & (event == 1)).sum()
        ng = np.array([(at_risk & (group == g)).sum() for g in levels])
        dg = np.array([((time == t) & (event == 1) & (group == g)).sum() for g in levels])
        u += scores @ (dg - d * ng / n)
        if n > 1:
            p = ng / n
            cov = d * (n - d) / (n - 1) * (np.diag(p) - np.outer(p, p))
            v += scores @ cov @ scores
    return u * u / v


def test_trend_against_definition():
    lung = load_lung().dropna(subset=["ph.ecog"])
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["ph.ecog"])
    mine = engine.logrank_test(cohort, by="ph.ecog")
    expected = _trend_by_definition(lung["time"].to_numpy(), lung["status"].to_numpy(),
                                    lung["ph.ecog"].to_numpy(), np.array([0.0, 1, 2, 3]))
    assert mine.scores.tolist() == [0, 1, 2, 3]
    assert mine.trend_statistic == pytest.approx(expected, rel=1e-10)
    custom = engine.logrank_test(cohort, by="ph.ecog", scores=[1, 2, 4, 8])
    expected = _trend_by_definition(lung["time"].to_numpy(), lung["status"].to_numpy(),
                                    lung["ph.ecog"].to_numpy(), np.array([1.0, 2, 4, 8]))
    assert custom.trend_statistic == pytest.approx(expected, rel=1e-10)


def test_entry_times_and_weights(rossi):
    """Split (start, stop] episodes give the unsplit test; integer weights = repeated rows."""
    rows = []
    for i, r in rossi.iterrows():
        bounds = [0, *[c for c in (8, 26) if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "fin": r["fin"],
                         "arrest": int(r["arrest"] and b == r["week"])})
    split = engine.Cohort.from_frame(pd.DataFrame(rows), "stop", "arrest", covariates=["fin"],
                                     start="start", id="id")
    plain = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin"])
    a, b = engine.logrank_test(plain, "fin", rho=1), engine.logrank_test(split, "fin", rho=1)
    assert b.statistic == pytest.approx(a.statistic, rel=1e-12)
    pd.testing.assert_frame_equal(a.table, b.table)
    w = 1 + np.arange(len(rossi)) % 3
    weighted = engine.Cohort.from_frame(rossi.assign(w=w), "week", "arrest", covariates=["fin"],
                                        weights="w")
    repeated = engine.Cohort.from_frame(rossi.loc[rossi.index.repeat(w)], "week", "arrest",
                                        covariates=["fin"])
    assert engine.logrank_test(weighted, "fin").statistic == pytest.approx(
        engine.logrank_test(repeated, "fin").statistic, rel=1e-12)


def test_bad_arguments(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age"])
    with pytest.raises(ValueError, match="rho"):
        engine.logrank_test(cohort, "fin", rho=-1)
    with pytest.raises(engine.CohortError, match="'sex'"):
        engine.logrank_test(cohort, "sex")
    with pytest.raises(ValueError, match="single group"):
        engine.logrank_test(cohort, np.zeros(cohort.n))
    with pytest.raises(ValueError, match="scores"):
        engine.logrank_test(cohort, "fin", scores=[1, 2, 3])
