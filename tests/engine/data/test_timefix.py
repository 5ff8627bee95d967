"""Times equal but for rounding are one time, as R's timefix (survival::aeqSurv) makes them
(with a tolerance for rounding alone: engine.data.timefix)."""
import numpy as np
import pandas as pd
import pytest

import engine
from engine.data.timefix import fixed_times

# id 1's second episode starts at 0.3 where its first ends at 0.1 + 0.2; 1.1 + 0.6 and 1.7 tie
EPISODES = pd.DataFrame({"id": [1, 1, 2, 3, 4, 5], "t0": [0, 0.3, 0, 0, 0, 0],
                         "t1": [0.1 + 0.2, 1.7, 0.3, 0.7, 1.1 + 0.6, 1.7],
                         "ev": [0, 1, 1, 0, 1, 1], "x": [1.0, 1, 0, 1, 0, 1]})


def test_episodes_that_meet_but_for_rounding_as_R():
    """R 4.2.2: survfit(Surv(t0, t1, ev) ~ 1, id = id) times 0.3, 0.7, 1.7, at risk 5, 4, 3,
    events 1, 0, 3, survival 0.8, 0.8, 0; coxph(... ~ x) -0.621412427843368."""
    cohort = engine.Cohort.from_frame(EPISODES, "t1", "ev", covariates=["x"], start="t0",
                                      id="id")
    table = engine.kaplan_meier(cohort).table
    assert table["time"].tolist() == [0.3, 0.7, 1.7]
    assert table["at_risk"].tolist() == [5, 4, 3] and table["events"].tolist() == [1, 0, 3]
    np.testing.assert_allclose(table["survival"], [0.8, 0.8, 0.0], atol=1e-15)
    fit = engine.fit(cohort, ties="efron")
    assert fit.coef["x"] == pytest.approx(-0.621412427843368, rel=1e-8)


def test_runs_of_near_ties_take_their_first_value():
    time = np.array([1.0, 1.0 + 1e-13, 1.0 + 2e-13, 2.0, 2.0 + 1e-9, 2.5])
    fixed, _ = fixed_times(time)
    assert fixed.tolist() == [1.0, 1.0, 1.0, 2.0, 2.0 + 1e-9, 2.5]   # close is not tied


def test_whole_numbers_are_left_as_they_are():
    time = np.array([3.0, 1.0, 2.0])
    assert fixed_times(time)[0] is time


def test_an_episode_shorter_than_rounding_is_refused():
    frame = pd.DataFrame({"id": [1, 2], "t0": [0.3, 0.0], "t1": [0.3 + 1e-12, 1.5],
                          "ev": [1, 0]})
    with pytest.raises(engine.CohortError, match="shorter than rounding.*row 0"):
        engine.Cohort.from_frame(frame, "t1", "ev", covariates=[], start="t0", id="id")
