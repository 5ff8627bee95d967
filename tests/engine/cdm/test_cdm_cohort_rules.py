"""CohortMethod's "restrict to common period" and "censor at the start of a new time at risk"
in engine.cdm.new_user_cohort, on the bundled Eunomia CDM, against the whole new-user cohort
computed again with plain pandas (the rules as CohortMethod's createStudyPopulation states
them), rows, times, events and the attrition counts of every rule."""
from __future__ import annotations

import pandas as pd
import pytest

from engine.cdm import new_user_cohort, open_eunomia

CELECOXIB, DICLOFENAC, GI_BLEED = 1118084, 1124300, 192671
IBUPROFEN, NAPROXEN = 1177480, 1115008     # many eras per person, persons in both arms
DAY = pd.Timedelta(days=1)


@pytest.fixture(scope="module")
def eunomia():
    con = open_eunomia()      # built once into survscan's cache directory
    yield con
    con.close()


@pytest.fixture(scope="module")
def tables(eunomia):
    q = eunomia.execute
    outcome = [r[0] for r in q("SELECT descendant_concept_id FROM concept_ancestor WHERE "
                               f"ancestor_concept_id = {GI_BLEED}").fetchall()] + [GI_BLEED]
    return {
        "era": q(f"SELECT person_id, drug_concept_id, drug_era_start_date AS start, "
                 f"drug_era_end_date AS end FROM drug_era WHERE drug_concept_id IN "
                 f"({CELECOXIB}, {DICLOFENAC}, {IBUPROFEN}, {NAPROXEN})").df(),
        "op": q("SELECT o.person_id, observation_period_start_date AS op_start, "
                "observation_period_end_date AS op_end FROM observation_period o "
                "JOIN person p ON p.person_id = o.person_id").df(),
        "outcome": q("SELECT person_id, condition_start_date AS day FROM condition_occurrence "
                     "WHERE condition_concept_id IN (SELECT unnest(?))", [outcome]).df(),
    }


def persons(rows) -> dict:
    return rows.groupby("treatment")["person_id"].nunique().reindex([1, 0], fill_value=0) \
        .to_dict()


def brute_force(t, target, comparator, *, first_only=True, duplicates="remove all",
                common=False, censor=False, prior_obs=183, lookback=30, rw_end=30):
    """The new-user cohort in pandas, one rule at a time; (cohort, persons after each rule)."""
    era = t["era"][t["era"]["drug_concept_id"].isin([target, comparator])]
    rows = era.assign(treatment=(era["drug_concept_id"] == target).astype(int))
    counts = [persons(rows)]
    if first_only:
        rows = rows.sort_values(["person_id", "treatment", "start", "end"],
                                ascending=[True, True, True, False])
        rows = rows.drop_duplicates(["person_id", "treatment"])
        counts.append(persons(rows))   # a rule that is off has no attrition row
    if common:   # index dates inside the overlap of the two arms' index dates
        first = rows.groupby("treatment")["start"].min().max()
        last = rows.groupby("treatment")["start"].max().min()
        rows = rows[(rows["start"] >= first) & (rows["start"] <= last)]
        counts.append(persons(rows))
    rows = rows.merge(t["op"], on="person_id")
    rows = rows[(rows["start"] >= rows["op_start"]) & (rows["start"] <= rows["op_end"])
                & ((rows["start"] - rows["op_start"]).dt.days >= prior_obs)]
    counts.append(persons(rows))
    if duplicates == "remove all":
        rows = rows[rows.groupby("person_id")["treatment"].transform("nunique") == 1]
    counts.append(persons(rows))
    prior = rows.reset_index().merge(t["outcome"], on="person_id")
    prior = prior[(prior["day"] >= prior["start"] - lookback * DAY) & (prior["day"] < prior["start"])]
    rows = rows.drop(index=prior["index"].unique())
    counts.append(persons(rows))
    rows = rows.assign(risk_start=rows["start"],
                       risk_end=pd.concat([rows["end"] + rw_end * DAY, rows["op_end"]],
                                          axis=1).min(axis=1))
    if censor:   # a window ends the day before the person's next window starts
        rows = rows.sort_values(["person_id", "risk_start", "treatment", "end"],
                                ascending=[True, True, False, True])
        nxt = rows.groupby("person_id")["risk_start"].shift(-1)
        cut = nxt.notna() & (nxt <= rows["risk_end"])
        rows.loc[cut, "risk_end"] = nxt[cut] - DAY
        rows = rows[rows["risk_end"] >= rows["risk_start"]]
        counts.append(persons(rows))
    hits = rows.reset_index().merge(t["outcome"], on="person_id")
    hits = hits[(hits["day"] >= hits["risk_start"]) & (hits["day"] <= hits["risk_end"])]
    first_hit = hits.groupby("index")["day"].min()
    rows = rows.assign(event=rows.index.isin(first_hit.index).astype(int),
                       stop=first_hit.reindex(rows.index).fillna(rows["risk_end"]))
    rows = rows.assign(time=((rows["stop"] - rows["risk_start"]).dt.days + 1).astype(float))
    rows = rows[rows["time"] >= 1]
    counts.append(persons(rows))
    cohort = rows[["person_id", "treatment", "start", "time", "event"]]
    return cohort.sort_values(["person_id", "start", "treatment"],
                              ascending=[True, True, False]).reset_index(drop=True), counts


def check(eunomia, tables, target, comparator, **rules):
    kw = {"first_exposure_only": rules.get("first_only", True),
          "remove_duplicate_subjects": rules.get("duplicates", "remove all"),
          "restrict_to_common_period": rules.get("common", False),
          "censor_at_new_risk_window": rules.get("censor", False),
          "risk_window_end": rules.get("rw_end", 30)}
    got = new_user_cohort(eunomia, target, comparator, GI_BLEED, **kw)
    expected, counts = brute_force(tables, target, comparator, **rules)
    assert got["person_id"].tolist() == expected["person_id"].tolist()
    assert got["treatment"].tolist() == expected["treatment"].tolist()
    assert got["time"].tolist() == expected["time"].tolist()
    assert got["event"].tolist() == expected["event"].tolist()
    a = got.attrs["attrition"]
    assert a["target_persons"].tolist() == [c[1] for c in counts]
    assert a["comparator_persons"].tolist() == [c[0] for c in counts]
    return got, a


def test_restrict_to_common_period_on_the_teaching_study(eunomia, tables):
    got, a = check(eunomia, tables, CELECOXIB, DICLOFENAC, common=True)
    assert a["rule"][2] == "Restrict to common period"
    assert (a["target_persons"][2], a["comparator_persons"][2]) == (1841, 849)
    plain = new_user_cohort(eunomia, CELECOXIB, DICLOFENAC, GI_BLEED)
    assert len(got) < len(plain) and "Restrict to common period" not in set(
        plain.attrs["attrition"]["rule"])


def test_common_period_with_every_exposure_and_persons_in_both_arms(eunomia, tables):
    check(eunomia, tables, IBUPROFEN, NAPROXEN, common=True, first_only=False,
          duplicates="keep all", rw_end=365)


def test_censor_at_the_start_of_a_new_time_at_risk(eunomia, tables):
    got, a = check(eunomia, tables, IBUPROFEN, NAPROXEN, censor=True, first_only=False,
                   duplicates="keep all", rw_end=365)
    assert "Censoring at start of new time-at-risk" in set(a["rule"])
    plain = new_user_cohort(eunomia, IBUPROFEN, NAPROXEN, GI_BLEED, first_exposure_only=False,
                            remove_duplicate_subjects="keep all", risk_window_end=365)
    assert got["time"].sum() < plain["time"].sum()   # overlapping windows were cut


def test_both_rules_together(eunomia, tables):
    check(eunomia, tables, IBUPROFEN, NAPROXEN, common=True, censor=True, first_only=False,
          duplicates="keep all", rw_end=365)
