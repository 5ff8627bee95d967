"""engine.gray_test against R cmprsk's published cuminc output and the properties of its
stratified sum.

R value: cmprsk::cuminc(bmtcrr$ftime, bmtcrr$Status, bmtcrr$D) on casebase's bmtcrr (our
sample_data/bmtcrr.csv; the data of Scrucca, Santucci and Aversa 2007, "Competing risk analysis
using R: an easy guide for clinicians"), as R prints it in published tutorials that run this call:

    Tests:
           stat         pv df
    1 2.8623325 0.09067592  1
    2 0.4481279 0.50322531  1
"""
import numpy as np
import pandas as pd
import pytest

import engine
from engine.data.datasets import load_bmtcrr


@pytest.fixture(scope="module")
def bmtcrr():
    return load_bmtcrr()


def test_bmtcrr_by_disease_against_R(bmtcrr):
    test = engine.gray_test(bmtcrr, by="D", time="ftime", event="Status").table
    assert test.index.tolist() == [1, 2]
    np.testing.assert_allclose(test["statistic"], [2.8623325, 0.4481279], rtol=2e-7)
    np.testing.assert_allclose(test["p"], [0.09067592, 0.50322531], rtol=2e-7)
    assert test["df"].tolist() == [1, 1]
    one = engine.gray_test(bmtcrr, by="D", cause=1, time="ftime", event="Status").table
    assert one.index.tolist() == [1] and one.loc[1, "statistic"] == test.loc[1, "statistic"]


def test_same_test_from_a_cohort_and_from_labels(bmtcrr):
    frame = bmtcrr.assign(aml=(bmtcrr["D"] == "AML").astype(int))
    cohort = engine.Cohort.from_frame(frame, "ftime", "Status", covariates=["aml", "Age"],
                                      competing_risks=True)
    from_cohort = engine.gray_test(cohort, by="aml").table
    from_labels = engine.gray_test(bmtcrr, by=bmtcrr["D"].to_numpy(), time="ftime",
                                   event="Status").table
    np.testing.assert_allclose(from_cohort["statistic"], [2.8623325, 0.4481279], rtol=2e-7)
    np.testing.assert_allclose(from_labels["statistic"], from_cohort["statistic"], rtol=1e-12)


def test_row_order_does_not_matter(bmtcrr):
    shuffled = bmtcrr.sample(frac=1.0, random_state=3)
    a = engine.gray_test(bmtcrr, "Phase", time="ftime", event="Status").table
    b = engine.gray_test(shuffled, "Phase", time="ftime", event="Status").table
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12)
    assert a["df"].tolist() == [3, 3]


@pytest.mark.parametrize("rho", [0.0, 1.0])
def test_strata_sum_scores_and_variances(bmtcrr, rho):
    """Two copies of the data as two strata: scores and variances double, so does s'V^-1 s;
    one stratum holding every row is the unstratified test."""
    plain = engine.gray_test(bmtcrr, "Phase", time="ftime", event="Status", rho=rho).table
    twice = pd.concat([bmtcrr.assign(copy="a"), bmtcrr.assign(copy="b")], ignore_index=True)
    doubled = engine.gray_test(twice, "Phase", strata="copy", time="ftime", event="Status",
                               rho=rho).table
    np.testing.assert_allclose(doubled["statistic"], 2 * plain["statistic"], rtol=1e-10)
    single = engine.gray_test(bmtcrr.assign(one=1), "Phase", strata="one", time="ftime",
                              event="Status", rho=rho).table
    np.testing.assert_allclose(single["statistic"], plain["statistic"], rtol=1e-12)


def test_strata_change_the_test(bmtcrr):
    plain = engine.gray_test(bmtcrr, "D", time="ftime", event="Status").table
    by_sex = engine.gray_test(bmtcrr, "D", strata="Sex", time="ftime", event="Status").table
    assert np.all(np.isfinite(by_sex["statistic"]))
    assert not np.allclose(by_sex["statistic"], plain["statistic"], rtol=1e-3)


def test_refusals(bmtcrr):
    with pytest.raises(engine.CohortError, match="single group"):
        engine.gray_test(bmtcrr.assign(one=1), "one", time="ftime", event="Status")
    with pytest.raises(engine.CohortError, match="cause \\[3\\] has no events"):
        engine.gray_test(bmtcrr, "D", cause=3, time="ftime", event="Status")
    bad = bmtcrr.copy()
    bad.loc[4, "D"] = None
    with pytest.raises(engine.CohortError, match="'D'.*missing values"):
        engine.gray_test(bad, "D", time="ftime", event="Status")
    with pytest.raises(engine.CohortError, match="'Dx'"):
        engine.gray_test(bmtcrr, "Dx", time="ftime", event="Status")
    with pytest.raises(ValueError, match="time= and event="):
        engine.gray_test(bmtcrr, "D")
