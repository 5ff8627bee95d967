"""engine.ph_check: the test, the scaled Schoenfeld residuals and the beta(t) smooths of one
pass over the rows, equal to engine.ph_test, scaled_schoenfeld and ph_smooth (each checked
against R's cox.zph in test_ph_test.py and test_ph_smooth.py), with strata, Efron ties and
entry times."""
import numpy as np
import pandas as pd
import pytest

import engine


@pytest.mark.parametrize("transform", ["km", "identity"])
def test_one_pass_equals_the_three_calls(rossi, transform):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest",
                                      covariates=["fin", "age", "prio", "race"], strata="wexp")
    res = engine.fit(cohort, ties="efron")
    check = engine.ph_check(res, transform=transform, df=3, points=25)
    pd.testing.assert_frame_equal(check.test.table,
                                  engine.ph_test(res, transform=transform).table)
    assert check.test.p == engine.ph_test(res, transform=transform).p
    pd.testing.assert_frame_equal(check.residuals,
                                  engine.scaled_schoenfeld(res, transform=transform))
    pd.testing.assert_frame_equal(check.smooth, engine.ph_smooth(res, df=3, points=25,
                                                                 transform=transform))


def test_entry_times_and_bad_smooth_arguments(rossi):
    rows = []
    for i, r in rossi.iterrows():
        cut = min(10.0, r["week"] / 2)
        rows += [{"id": i, "start": 0.0, "stop": cut, "arrest": 0, "age": r["age"],
                  "prio": r["prio"]},
                 {"id": i, "start": cut, "stop": r["week"], "arrest": r["arrest"],
                  "age": r["age"], "prio": r["prio"]}]
    cohort = engine.Cohort.from_frame(pd.DataFrame(rows), "stop", "arrest",
                                      covariates=["age", "prio"], start="start", id="id")
    res = engine.fit(cohort, ties="breslow")
    check = engine.ph_check(res)
    np.testing.assert_array_equal(check.test.table["chisq"], engine.ph_test(res).table["chisq"])
    with pytest.raises(ValueError, match="df must be an integer >= 2"):
        engine.ph_check(res, df=1)
