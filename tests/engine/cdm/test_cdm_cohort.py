"""The new-user cohort rules, each pinned on a hand-made CDM of a few persons (DuckDB tables
created in the test).  Target ingredient 1, comparator 2, outcome concept 10 with descendant
11; concept 12 is unrelated."""
from __future__ import annotations

import duckdb
import pytest

from engine.cdm import new_user_cohort

OBS = ("2000-01-01", "2001-12-31")
# person_id -> (observation period, [(ingredient, era start, era end)], [(concept, date)])
PERSONS = {
    1: (OBS, [(1, "2000-08-01", "2000-08-10"), (1, "2001-01-01", "2001-01-05")], []),
    2: (("2000-06-01", "2001-12-31"), [(1, "2000-08-01", "2000-08-10")], []),      # 61 days
    3: (OBS, [(1, "2000-08-01", "2000-08-10"), (2, "2000-09-01", "2000-09-10")], []),  # both
    4: (OBS, [(2, "2000-08-01", "2000-08-05")], [(11, "2000-07-20")]),              # prior
    5: (OBS, [(2, "2000-08-01", "2000-08-05")], [(11, "2000-08-20"), (12, "2000-08-02")]),
    6: (OBS, [(1, "2000-08-01", "2000-08-05")], [(10, "2000-09-05")]),      # after era + 30
    7: (("2000-01-01", "2000-08-15"), [(1, "2000-08-01", "2000-08-05")], []),       # obs end
    8: (("2000-01-01", "2000-08-01"), [(1, "2000-08-01", "2000-08-03")], []),       # 1 day
    10: (OBS, [(1, "2002-03-01", "2002-03-05")], []),                 # outside observation
}
NOT_IN_PERSON = 9   # observation period and era, but no person row


@pytest.fixture
def cdm():
    con = duckdb.connect()
    con.execute("CREATE TABLE person (person_id BIGINT, gender_concept_id BIGINT, "
                "year_of_birth INTEGER)")
    con.execute("CREATE TABLE observation_period (person_id BIGINT, "
                "observation_period_start_date DATE, observation_period_end_date DATE)")
    con.execute("CREATE TABLE drug_era (person_id BIGINT, drug_concept_id BIGINT, "
                "drug_era_start_date DATE, drug_era_end_date DATE)")
    con.execute("CREATE TABLE condition_occurrence (person_id BIGINT, "
                "condition_concept_id BIGINT, condition_start_date DATE)")
    con.execute("CREATE TABLE concept_ancestor (ancestor_concept_id BIGINT, "
                "descendant_concept_id BIGINT)")
    con.execute("INSERT INTO concept_ancestor VALUES (10, 10), (10, 11), (12, 12)")
    for pid, ((start, end), eras, conditions) in PERSONS.items():
        con.execute("INSERT INTO person VALUES (?, 8532, 1960)", [pid])
        con.execute("INSERT INTO observation_period VALUES (?, ?, ?)", [pid, start, end])
        for ingredient, a, b in eras:
            con.execute("INSERT INTO drug_era VALUES (?, ?, ?, ?)", [pid, ingredient, a, b])
        for concept, date in conditions:
            con.execute("INSERT INTO condition_occurrence VALUES (?, ?, ?)", [pid, concept, date])
    con.execute("INSERT INTO observation_period VALUES (?, ?, ?)", [NOT_IN_PERSON, *OBS])
    con.execute("INSERT INTO drug_era VALUES (?, 1, '2000-08-01', '2000-08-10')",
                [NOT_IN_PERSON])
    return con


def _study(con, **kw):
    return new_user_cohort(con, 1, 2, 10, **kw).set_index("person_id")


def test_default_design(cdm):
    c = _study(cdm)
    assert sorted(c.index) == [1, 5, 6, 7, 8]
    assert c["treatment"].to_dict() == {1: 1, 5: 0, 6: 1, 7: 1, 8: 1}
    assert list(c.columns) == ["treatment", "cohort_start_date", "cohort_end_date", "time",
                               "event"]


def test_first_exposure_only_and_time_at_risk(cdm):
    c = _study(cdm)
    assert str(c.loc[1, "cohort_start_date"])[:10] == "2000-08-01"
    assert (c.loc[1, "time"], c.loc[1, "event"]) == (40.0, 0)   # Aug 1 .. Sep 9 (Aug 10 + 30)
    every = new_user_cohort(cdm, 1, 2, 10, first_exposure_only=False)
    assert (every["person_id"] == 1).sum() == 2


def test_prior_observation(cdm):
    assert 2 not in _study(cdm).index
    assert 2 in _study(cdm, prior_observation=61).index
    assert 2 not in _study(cdm, prior_observation=62).index


def test_persons_in_both_cohorts(cdm):
    assert 3 not in _study(cdm).index
    first = _study(cdm, remove_duplicate_subjects="keep first")
    assert first.loc[3, "treatment"] == 1
    both = new_user_cohort(cdm, 1, 2, 10, remove_duplicate_subjects="keep all")
    assert sorted(both.loc[both["person_id"] == 3, "treatment"]) == [0, 1]


def test_prior_outcome_lookback(cdm):
    assert 4 not in _study(cdm).index                         # outcome 12 days before
    assert 4 in _study(cdm, prior_outcome_lookback=11).index
    assert 4 not in _study(cdm, prior_outcome_lookback=12).index
    assert 4 in _study(cdm, prior_outcome_lookback=None).index


def test_outcome_descendants(cdm):
    c = _study(cdm)
    assert (c.loc[5, "time"], c.loc[5, "event"]) == (20.0, 1)  # concept 11 on day 19
    plain = _study(cdm, outcome_descendants=False)
    assert (plain.loc[5, "time"], plain.loc[5, "event"]) == (35.0, 0)


def test_risk_window_end(cdm):
    c = _study(cdm)
    assert (c.loc[6, "time"], c.loc[6, "event"]) == (35.0, 0)  # outcome the day after
    longer = _study(cdm, risk_window_end=31)
    assert (longer.loc[6, "time"], longer.loc[6, "event"]) == (36.0, 1)
    start = _study(cdm, end_anchor="cohort start", risk_window_end=365)
    assert (start.loc[6, "time"], start.loc[6, "event"]) == (36.0, 1)


def test_censoring_at_observation_end(cdm):
    c = _study(cdm)
    assert (c.loc[7, "time"], c.loc[7, "event"]) == (15.0, 0)
    assert _study(cdm, censor_at_observation_end=False).loc[7, "time"] == 35.0


def test_min_days_at_risk(cdm):
    assert _study(cdm).loc[8, "time"] == 1.0
    assert 8 not in _study(cdm, min_days_at_risk=2).index


def test_person_table_inner_join_and_observation(cdm):
    c = _study(cdm)
    assert NOT_IN_PERSON not in c.index and 10 not in c.index


def test_attrition_counts_each_rule(cdm):
    table = new_user_cohort(cdm, 1, 2, 10).attrs["attrition"]
    # target: 1,2,3,6,7,8,9,10 ; comparator: 3,4,5
    assert table["target_persons"].tolist() == [8, 8, 5, 4, 4, 4]
    assert table["comparator_persons"].tolist() == [3, 3, 3, 2, 1, 1]
    assert table["rule"].iloc[2] == "At least 183 days of prior observation"


def test_bad_arguments(cdm):
    with pytest.raises(ValueError, match="both target and comparator"):
        new_user_cohort(cdm, [1, 2], 2, 10)
    with pytest.raises(ValueError, match="remove_duplicate_subjects"):
        new_user_cohort(cdm, 1, 2, 10, remove_duplicate_subjects="drop")
    with pytest.raises(ValueError, match="concept id"):
        new_user_cohort(cdm, "1; DROP TABLE person", 2, 10)
