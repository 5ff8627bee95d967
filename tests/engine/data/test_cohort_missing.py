"""Cohort.from_frame(missing="drop"): complete-case analysis with the dropped rows counted."""
import numpy as np
import pandas as pd
import pytest
from lifelines.datasets import load_lung

import engine


@pytest.fixture(scope="module")
def lung():
    return load_lung()


def test_lung_with_missing_values_is_refused_by_default(lung):
    with pytest.raises(engine.CohortError, match="'ph.ecog'.*missing=.drop."):
        engine.Cohort.from_frame(lung, "time", "status", covariates=["age", "ph.ecog"])


def test_drop_counts_rows_per_column(lung):
    cohort = engine.Cohort.from_frame(lung, "time", "status",
                                      covariates=["age", "ph.ecog", "wt.loss"], missing="drop")
    expected = lung.dropna(subset=["age", "ph.ecog", "wt.loss"])
    assert cohort.n == len(expected) == 213
    assert cohort.dropped == {"ph.ecog": 1, "wt.loss": 14}
    assert cohort.n_dropped == 15
    np.testing.assert_array_equal(cohort.time, expected["time"])
    # the fit on the kept rows is the fit on the complete cases, and says what was dropped
    res = engine.fit(cohort, ties="efron")
    same = engine.fit(engine.Cohort.from_frame(expected, "time", "status",
                                               covariates=["age", "ph.ecog", "wt.loss"]),
                      ties="efron")
    pd.testing.assert_series_equal(res.coef, same.coef)
    assert res.spec["source"]["dropped"] == {"ph.ecog": 1, "wt.loss": 14}
    assert res.spec["source"]["n_dropped"] == 15 and res.n == 213
    km = engine.kaplan_meier(cohort)
    assert km.n_dropped == 15 and km.dropped == cohort.dropped
    test = engine.logrank_test(cohort, "ph.ecog")
    assert test.spec["n_dropped"] == 15


def test_a_row_missing_in_two_columns_counts_in_both():
    df = pd.DataFrame({"t": [1.0, 2, 3, 4, 5], "e": [1, 0, 1, 1, 0],
                       "x": [np.nan, 1, 2, 3, np.nan], "g": [None, "a", "b", "a", "b"]})
    cohort = engine.Cohort.from_frame(df, "t", "e", covariates=["x", "g"], missing="drop")
    assert cohort.dropped == {"x": 2, "g": 1} and cohort.n_dropped == 2
    assert cohort.n == 3


def test_missing_in_time_or_event_is_dropped_too():
    df = pd.DataFrame({"t": [1.0, np.nan, 3, 4], "e": [1, 0, None, 1], "x": [1.0, 2, 3, 5]})
    cohort = engine.Cohort.from_frame(df, "t", "e", covariates=["x"], missing="drop")
    assert cohort.dropped == {"t": 1, "e": 1} and cohort.n == 2


def test_nothing_left_and_bad_option():
    df = pd.DataFrame({"t": [1.0, 2], "e": [1, 1], "x": [np.nan, np.nan]})
    with pytest.raises(engine.CohortError, match="every row"):
        engine.Cohort.from_frame(df, "t", "e", covariates=["x"], missing="drop")
    with pytest.raises(ValueError, match="missing"):
        engine.Cohort.from_frame(df, "t", "e", covariates=["x"], missing="impute")


def test_without_missing_values_nothing_is_dropped(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", missing="drop")
    assert cohort.dropped == {} and cohort.n_dropped == 0 and cohort.n == 432
