"""Runs the bad-input corpus of tests/support/bad_input_cases.py: each case ends as classified, a clear
error (its type, a message naming the column or argument) or a warning; nothing crashes and
nothing passes silently."""
import warnings

import pytest

from bad_input_cases import CASES


@pytest.mark.parametrize("family, name, call, expected", CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_bad_input_ends_as_classified(family, name, call, expected):
    kind, kind_type, pattern = expected
    if kind_type == "DataLoadError":                  # the app's, imported where Panel is
        pytest.importorskip("panel")
        from app.data.loading import DataLoadError as kind_type
    if kind == "error":
        with pytest.raises(kind_type, match=pattern):
            call()
    else:
        with pytest.warns(kind_type, match=pattern):
            call()


def test_the_corpus_covers_every_family_with_unique_names():
    names = [(c[0], c[1]) for c in CASES]
    assert len(names) == len(set(names))
    assert {c[0] for c in CASES} >= {"cox", "fine_gray", "logistic", "sccs", "bayes", "omop",
                                     "app", "robust", "propensity", "prediction", "formula",
                                     "sensitivity", "metrics"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(CASES) >= 300


def test_gray_test_of_a_cohort_with_labels_equals_its_dataframe_route():
    """Labels for a Cohort used to crash (len() of a Cohort); the DataFrame route is the one
    checked against cmprsk::cuminc in test_gray_test.py."""
    import engine
    from bad_input_cases import CR, DF

    labels = DF["z"].to_numpy()
    by_cohort = engine.gray_test(CR, labels)
    by_frame = engine.gray_test(DF, labels, time="t", event="c")
    assert by_cohort.table.equals(by_frame.table)
