"""The comparative new-user cohort of OHDSI's CohortMethod, in SQL on DuckDB.

Exposure cohorts are drug eras of the target and comparator ingredients (cohort start/end =
era start/end).  The rules, applied in CohortMethod's order, each a keyword argument with
CohortMethod's default for the Eunomia teaching study:

1. first exposure only (per person and arm);
2. optionally, restrict to the common period (``restrict_to_common_period``): index dates
   inside the overlap of the two arms' index dates, from the later of their first index dates
   to the earlier of their last ones;
3. at least ``prior_observation`` days of observation before the index date (the index date
   inside an observation period);
4. persons in both cohorts: "remove all" (or "keep first", "keep all");
5. no outcome in the ``prior_outcome_lookback`` days before the risk window starts;
6. time at risk from index + ``risk_window_start`` to (cohort end, or start) +
   ``risk_window_end``, censored at the end of the observation period;
7. optionally, censor at the start of a new time at risk (``censor_at_new_risk_window``): a
   person's window ends the day before their next window starts (several rows per person come
   from ``first_exposure_only=False`` or persons kept in both arms); a window that would end
   before it starts (two starting the same day: the target's, which sorts first) is dropped;
8. at least ``min_days_at_risk`` days at risk.

Rules 2 and 7 are CohortMethod's ``restrictToCommonPeriod`` and ``censorAtNewRiskWindow``
(off by default, as there); when on, each is a row of the attrition table.

Days at risk count both ends (CohortMethod's survivalTime): a person whose risk window is the
index day alone has time 1; an outcome on day d of the window gives time d + 1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

ARMS = ("target", "comparator")
DUPLICATES = ("remove all", "keep first", "keep all")


def new_user_cohort(con, target, comparator, outcome, *, first_exposure_only: bool = True,
                    prior_observation: int = 183, remove_duplicate_subjects: str = "remove all",
                    prior_outcome_lookback: int | None = 30, risk_window_start: int = 0,
                    risk_window_end: int = 30, end_anchor: str = "cohort end",
                    censor_at_observation_end: bool = True, min_days_at_risk: int = 1,
                    outcome_descendants: bool = True, restrict_to_common_period: bool = False,
                    censor_at_new_risk_window: bool = False) -> pd.DataFrame:
    """One row per person (per exposure with ``first_exposure_only=False``) of the study.

    Parameters
    ----------
    con : DuckDB connection to an OMOP CDM (engine.cdm.open_cdm / open_eunomia)
    target, comparator : ingredient concept id(s) of drug_era (e.g. celecoxib 1118084,
        diclofenac 1124300)
    outcome : condition concept id(s) (e.g. GI haemorrhage 192671); with
        ``outcome_descendants`` their descendants in concept_ancestor count too
    prior_outcome_lookback : days; None keeps persons with a prior outcome
    end_anchor : "cohort end" | "cohort start": what ``risk_window_end`` counts from
    restrict_to_common_period, censor_at_new_risk_window : rules 2 and 7 above

    Returns
    -------
    DataFrame with person_id, treatment (1 target, 0 comparator), cohort_start_date,
    cohort_end_date, time (days at risk, or to the first outcome), event (0/1); the attrition
    table (persons left after each rule, per arm) is in ``.attrs["attrition"]``.
    """
    for name, value in (("prior_observation", prior_observation),
                        ("min_days_at_risk", min_days_at_risk)):
        if not (isinstance(value, int | np.integer) and value >= 0):
            raise ValueError(f"{name} must be a whole number of days >= 0, got {value!r}")
    if end_anchor == "cohort start" and risk_window_end < risk_window_start:
        raise ValueError(f"the risk window ends (day {risk_window_end} after the cohort start) "
                         f"before it starts (day {risk_window_start}); give "
                         "risk_window_end >= risk_window_start.")
    sql = _stages_sql(_ids(target, "target"), _ids(comparator, "comparator"),
                      _ids(outcome, "outcome"), first_exposure_only, int(prior_observation),
                      remove_duplicate_subjects, prior_outcome_lookback,
                      int(risk_window_start), int(risk_window_end), end_anchor,
                      censor_at_observation_end, int(min_days_at_risk), outcome_descendants,
                      bool(restrict_to_common_period), bool(censor_at_new_risk_window))
    cohort = con.execute(sql + """
        SELECT person_id, treatment, cohort_start_date, cohort_end_date,
               CAST(time AS DOUBLE) AS time, event
        FROM at_risk ORDER BY person_id, cohort_start_date, treatment DESC""").df()
    stages = [(stage, text) for stage, text in _STAGES
              if (stage != "first_exposure" or first_exposure_only)
              and (stage != "common_period" or restrict_to_common_period)
              and (stage != "new_window" or censor_at_new_risk_window)]
    counts = con.execute(sql + "\n" + "\nUNION ALL\n".join(
        f"SELECT {k} AS step, treatment, count(DISTINCT person_id) AS persons FROM {stage} "
        "GROUP BY treatment" for k, (stage, _) in enumerate(stages))).df()
    cohort.attrs["attrition"] = _attrition(counts, stages, prior_observation,
                                           remove_duplicate_subjects, prior_outcome_lookback,
                                           min_days_at_risk)
    cohort["event"] = cohort["event"].astype("int64")
    cohort["treatment"] = cohort["treatment"].astype("int64")
    return cohort


_STAGES = [
    ("exposures", "Original cohorts"),
    ("first_exposure", "First exposure only"),
    ("common_period", "Restrict to common period"),
    ("prior_obs", "At least {prior_observation} days of prior observation"),
    ("unique_subjects", "Persons in both cohorts: {remove_duplicate_subjects}"),
    ("no_prior_outcome", "No outcome in the {prior_outcome_lookback} days before"),
    ("new_window", "Censoring at start of new time-at-risk"),
    ("at_risk", "At least {min_days_at_risk} day(s) at risk"),
]


def _attrition(counts, stages, prior_observation, remove_duplicate_subjects,
               prior_outcome_lookback, min_days_at_risk) -> pd.DataFrame:
    """Persons per arm after each rule, one row per rule."""
    table = counts.pivot_table(index="step", columns="treatment", values="persons",
                               fill_value=0).reindex(range(len(stages)), fill_value=0)
    words = dict(prior_observation=prior_observation,
                 remove_duplicate_subjects=remove_duplicate_subjects,
                 prior_outcome_lookback=prior_outcome_lookback, min_days_at_risk=min_days_at_risk)
    return pd.DataFrame({
        "rule": [text.format(**words) for _, text in stages],
        "target_persons": table.get(1, pd.Series(0, index=table.index)).astype(int).to_numpy(),
        "comparator_persons": table.get(0, pd.Series(0, index=table.index)).astype(int)
        .to_numpy()})


def _ids(value, what) -> str:
    """Concept ids as a SQL list (integers only: nothing else reaches the SQL text)."""
    one = isinstance(value, int | np.integer) and not isinstance(value, bool)
    values = [value] if one else list(value) if isinstance(value, list | tuple | np.ndarray) \
        else []
    if not values or not all((isinstance(v, int) or hasattr(v, "__index__"))
                             and not isinstance(v, bool) for v in values):
        raise ValueError(f"{what} must be a concept id or a list of concept ids, got {value!r}")
    return ", ".join(str(int(v)) for v in values)


def _stages_sql(target, comparator, outcome, first_only, prior_observation, duplicates,
                lookback, rw_start, rw_end, end_anchor, censor, min_days, descendants,
                common_period, new_window) -> str:
    """The CTE chain: one named stage per rule (see _STAGES)."""
    if duplicates not in DUPLICATES:
        raise ValueError(f"remove_duplicate_subjects must be one of {DUPLICATES}, got "
                         f"{duplicates!r}")
    if end_anchor not in ("cohort end", "cohort start"):
        raise ValueError(f"end_anchor must be 'cohort end' or 'cohort start', got {end_anchor!r}")
    overlap = set(target.split(", ")) & set(comparator.split(", "))
    if overlap:
        raise ValueError(f"concept(s) {sorted(overlap)} are both target and comparator.")
    outcome_concepts = (f"SELECT descendant_concept_id AS concept_id FROM concept_ancestor "
                        f"WHERE ancestor_concept_id IN ({outcome}) UNION "
                        if descendants else "") + f"SELECT unnest([{outcome}]) AS concept_id"
    keep = {"remove all": "n_arms = 1",
            "keep first": "n_arms = 1 OR (cohort_start_date = first_start AND n_first = 1)",
            "keep all": "TRUE"}[duplicates]
    prior_outcome = ("" if lookback is None else f"""
          WHERE NOT EXISTS (SELECT 1 FROM outcome_events o WHERE o.person_id = u.person_id
            AND o.outcome_date >= u.cohort_start_date - INTERVAL {int(lookback)} DAY
            AND o.outcome_date < u.cohort_start_date + INTERVAL {rw_start} DAY)""")
    anchor = "cohort_end_date" if end_anchor == "cohort end" else "cohort_start_date"
    risk_end = f"{anchor} + INTERVAL {rw_end} DAY"
    if censor:
        risk_end = f"least({risk_end}, observation_period_end_date)"
    return f"""
WITH exposures AS (
  SELECT person_id, CASE WHEN drug_concept_id IN ({target}) THEN 1 ELSE 0 END AS treatment,
         drug_era_start_date AS cohort_start_date, drug_era_end_date AS cohort_end_date
  FROM drug_era WHERE drug_concept_id IN ({target}, {comparator})),
first_exposure AS (
  SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY person_id, treatment
                                 ORDER BY cohort_start_date, cohort_end_date DESC) AS rn
    FROM exposures) WHERE rn = 1 OR NOT {first_only}),
arm_periods AS (
  SELECT min(cohort_start_date) AS first_index, max(cohort_start_date) AS last_index
  FROM first_exposure GROUP BY treatment),
common_period AS (
  SELECT * FROM first_exposure
  WHERE NOT {common_period} OR cohort_start_date BETWEEN
        (SELECT max(first_index) FROM arm_periods) AND (SELECT min(last_index) FROM arm_periods)),
prior_obs AS (
  SELECT e.*, op.observation_period_end_date
  FROM common_period e
  JOIN person p ON p.person_id = e.person_id
  JOIN observation_period op ON op.person_id = e.person_id
   AND e.cohort_start_date BETWEEN op.observation_period_start_date
                               AND op.observation_period_end_date
  WHERE date_diff('day', op.observation_period_start_date, e.cohort_start_date)
        >= {prior_observation}),
arms AS (
  SELECT *, count(DISTINCT treatment) OVER (PARTITION BY person_id) AS n_arms,
         min(cohort_start_date) OVER (PARTITION BY person_id) AS first_start
  FROM prior_obs),
unique_subjects AS (
  SELECT * EXCLUDE (n_arms, first_start, n_first) FROM (
    SELECT *, count(DISTINCT treatment) FILTER (WHERE cohort_start_date = first_start)
              OVER (PARTITION BY person_id) AS n_first FROM arms)
  WHERE {keep}),
outcome_concepts AS ({outcome_concepts}),
outcome_events AS (
  SELECT person_id, condition_start_date AS outcome_date FROM condition_occurrence
  WHERE condition_concept_id IN (SELECT concept_id FROM outcome_concepts)),
no_prior_outcome AS (
  SELECT u.* FROM unique_subjects u{prior_outcome}),
windows AS (
  SELECT *, cohort_start_date + INTERVAL {rw_start} DAY AS risk_start, {risk_end} AS risk_end
  FROM no_prior_outcome),
next_windows AS (
  SELECT *, lead(risk_start) OVER (PARTITION BY person_id ORDER BY risk_start, treatment DESC,
                                   cohort_start_date, cohort_end_date) AS next_start
  FROM windows),
new_window AS (
  SELECT * EXCLUDE (next_start) REPLACE (
           CASE WHEN {new_window} AND next_start <= risk_end
                THEN next_start - INTERVAL 1 DAY ELSE risk_end END AS risk_end)
  FROM next_windows
  WHERE NOT {new_window} OR next_start IS NULL OR next_start > risk_start),
at_risk AS (
  SELECT w.person_id, w.treatment, w.cohort_start_date, w.cohort_end_date,
         CASE WHEN min(o.outcome_date) IS NULL
              THEN date_diff('day', w.risk_start, w.risk_end) + 1
              ELSE date_diff('day', w.risk_start, min(o.outcome_date)) + 1 END AS time,
         CASE WHEN min(o.outcome_date) IS NULL THEN 0 ELSE 1 END AS event
  FROM new_window w
  LEFT JOIN outcome_events o ON o.person_id = w.person_id
   AND o.outcome_date BETWEEN w.risk_start AND w.risk_end
  WHERE date_diff('day', w.risk_start, w.risk_end) + 1 >= {min_days}
  GROUP BY w.person_id, w.treatment, w.cohort_start_date, w.cohort_end_date, w.risk_start,
           w.risk_end)
"""
