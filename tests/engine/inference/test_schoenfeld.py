"""engine.schoenfeld against R 4.2.2 / survival 3.5-3, residuals(fit, type = "schoenfeld"),
printed to 15 digits (rows: strata in order, then event times), and its defining sum."""
import numpy as np
import pandas as pd
import pytest

import engine


@pytest.fixture(scope="module")
def rossi():
    r = pd.read_csv("sample_data/rossi.csv")
    return r.assign(w=0.5 + (np.arange(len(r)) % 7) / 4)


def test_weighted_stratified_efron_as_R(rossi):
    # coxph(Surv(week, arrest) ~ fin + age + prio + strata(race), weights = w): rows 1, 2, 60
    # and 114 of residuals(f, "schoenfeld") and colSums
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"],
                                      weights="w", strata="race")
    table = engine.schoenfeld(engine.fit(cohort, ties="efron"))
    assert len(table) == 114 and table["time"].iloc[[0, 1, 59, 113]].tolist() == [7, 14, 25, 52]
    expected = [[0.653287814097064, -2.38512227278423, -2.53092026810561],
                [-0.340242580658069, -2.40874248922280, 2.44401565647840],
                [-0.433275297557965, 5.13018394576385, 14.53865971570319],
                [-0.451267125617031, 9.70251162192062, -1.31362677029067]]
    values = table[["fin", "age", "prio"]].to_numpy()
    np.testing.assert_allclose(values[[0, 1, 59, 113]], expected, rtol=1e-7)
    np.testing.assert_allclose(values.sum(0), [-1.37417482061692, -19.53159002962038,
                                               27.23945989219363], rtol=1e-6)


def test_breslow_as_R_and_sums_to_the_score(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["fin", "age", "prio"])
    fit = engine.fit(cohort, ties="breslow")
    table = engine.schoenfeld(fit)
    expected = [[-0.401801594351298, -2.51939043532475, -4.259455833057953],
                [-0.409128854590677, -2.67124534054972, -0.865774817071794],
                [-0.433178721731938, 9.87481006794954, -1.493253895096301]]
    np.testing.assert_allclose(table[["fin", "age", "prio"]].to_numpy()[[0, 49, 113]],
                               expected, rtol=1e-7)
    # the events' residuals add up to the score, zero at the estimate
    np.testing.assert_allclose(table[["fin", "age", "prio"]].sum(), 0, atol=1e-5)
    assert (table["row"].map(lambda i: rossi["arrest"].iloc[i]) == 1).all()
