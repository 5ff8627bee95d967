"""Baseline covariates of a cohort, after OHDSI FeatureExtraction's default set: binary
indicators of conditions, drug ingredients and procedures in look-back windows before the index
date, 5-year age groups and sex, as a sparse matrix with readable names such as
"condition 365d: Osteoarthritis of knee"."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .cohort import _ids


@dataclass
class Covariates:
    """X : (n, p) scipy.sparse.csc_matrix of 0/1, rows in the cohort's order; names : p
    readable names; ref : DataFrame, one row per column (name, analysis, concept_id)."""

    X: sp.csc_matrix
    names: list
    ref: pd.DataFrame


def baseline_covariates(con, cohort: pd.DataFrame, windows=(365, 30), end_day: int = 0,
                        exclude=()) -> Covariates:
    """Covariates of every cohort row (person_id, cohort_start_date) from the CDM.

    A condition (condition_occurrence start) or procedure (procedure_date) counts in the
    ``w``-day window when it falls on days [-w, end_day] relative to the index date; a drug era
    when it overlaps that window (FeatureExtraction's long- and short-term windows, end day 0).
    ``exclude``: drug concept ids left out with their descendants (the study's target and
    comparator ingredients, which define the arms).
    """
    rows = pd.DataFrame({"row_id": np.arange(len(cohort), dtype=np.int64),
                         "person_id": cohort["person_id"].to_numpy(),
                         "index_date": pd.to_datetime(cohort["cohort_start_date"]).to_numpy()})
    excluded = _ids(list(exclude), "exclude") if len(exclude) else "NULL"
    windows = [int(w) for w in windows]
    window_values = ", ".join(f"({w})" for w in windows)
    name = "_survscan_covariate_rows"
    con.register(name, rows)
    try:
        pairs = con.execute(f"""
WITH c AS (SELECT row_id, person_id, CAST(index_date AS DATE) AS index_date FROM {name}),
w AS (SELECT * FROM (VALUES {window_values}) AS t(days)),
excluded AS (SELECT descendant_concept_id AS concept_id FROM concept_ancestor
             WHERE ancestor_concept_id IN ({excluded}) UNION SELECT unnest([{excluded}])),
features AS (
  SELECT c.row_id, 'condition ' || w.days || 'd' AS analysis, w.days,
         co.condition_concept_id AS concept_id
  FROM c JOIN condition_occurrence co ON co.person_id = c.person_id CROSS JOIN w
  WHERE date_diff('day', co.condition_start_date, c.index_date) BETWEEN -{end_day} AND w.days
  UNION
  SELECT c.row_id, 'drug ' || w.days || 'd', w.days, de.drug_concept_id
  FROM c JOIN drug_era de ON de.person_id = c.person_id CROSS JOIN w
  WHERE date_diff('day', de.drug_era_start_date, c.index_date) >= -{end_day}
    AND date_diff('day', de.drug_era_end_date, c.index_date) <= w.days
    AND de.drug_concept_id NOT IN (SELECT concept_id FROM excluded WHERE concept_id IS NOT NULL)
  UNION
  SELECT c.row_id, 'procedure ' || w.days || 'd', w.days, po.procedure_concept_id
  FROM c JOIN procedure_occurrence po ON po.person_id = c.person_id CROSS JOIN w
  WHERE date_diff('day', po.procedure_date, c.index_date) BETWEEN -{end_day} AND w.days),
demographics AS (
  SELECT c.row_id, 'age group' AS analysis, 0 AS days,
         CAST(floor((year(c.index_date) - p.year_of_birth) / 5) AS BIGINT) AS concept_id
  FROM c JOIN person p ON p.person_id = c.person_id
  UNION ALL
  SELECT c.row_id, 'sex', 0, p.gender_concept_id
  FROM c JOIN person p ON p.person_id = c.person_id)
SELECT f.row_id, f.analysis, f.days, f.concept_id,
       CASE WHEN f.analysis = 'age group'
            THEN CAST(5 * f.concept_id AS VARCHAR) || '-' || CAST(5 * f.concept_id + 4 AS VARCHAR)
            ELSE coalesce(k.concept_name, 'concept ' || CAST(f.concept_id AS VARCHAR)) END
         AS concept_name
FROM (SELECT * FROM demographics UNION ALL
      SELECT * FROM features WHERE concept_id <> 0) f
LEFT JOIN concept k ON k.concept_id = f.concept_id AND f.analysis <> 'age group'
""").df()
    finally:
        con.unregister(name)
    return _as_sparse(pairs, len(cohort), windows)


def _as_sparse(pairs: pd.DataFrame, n: int, windows) -> Covariates:
    """One 0/1 column per (analysis, concept): demographics first, then each domain and
    window, concepts in id order."""
    order = {"age group": 0, "sex": 1}
    for k, domain in enumerate(("condition", "drug", "procedure")):
        for m, w in enumerate(windows):
            order[f"{domain} {w}d"] = 2 + k * len(windows) + m
    ref = (pairs[["analysis", "concept_id", "concept_name"]].drop_duplicates(["analysis",
                                                                               "concept_id"])
           .assign(rank=lambda d: d["analysis"].map(order))
           .sort_values(["rank", "concept_id"]).drop(columns="rank").reset_index(drop=True))
    ref["name"] = ref["analysis"] + ": " + ref["concept_name"].astype(str)
    ref["covariate_id"] = np.arange(len(ref))
    col = pairs.merge(ref[["analysis", "concept_id", "covariate_id"]],
                      on=["analysis", "concept_id"])["covariate_id"].to_numpy()
    row = pairs["row_id"].to_numpy()
    X = sp.csc_matrix((np.ones(row.size), (row, col)), shape=(n, len(ref)))
    X.sum_duplicates()
    X.data[:] = 1.0
    return Covariates(X=X, names=ref["name"].tolist(),
                      ref=ref[["covariate_id", "name", "analysis", "concept_id", "concept_name"]])
