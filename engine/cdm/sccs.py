"""A self-controlled case series study from an OMOP CDM in one call (OHDSI
SelfControlledCaseSeries' design, on DuckDB): cases, eras, attrition, the incidence-rate ratio
with its intervals, and the standard diagnostics as data.

- Cases: observation periods holding an outcome (condition_occurrence of the outcome concepts,
  with their descendants), first outcome of a person only by default; outcomes on one day
  count once.  Days are counted from each person's birth date (month and day default to
  July 1 / the 1st when missing), so ``age_cuts`` are ages in days.
- Exposure: the drug eras of the exposure ingredient(s), a risk window (a, b) after each era's
  start ("end", "end+k" count from the era's end), inclusive days as SccsData.from_cases.
- Diagnostics (Schuemie et al.'s SCCS diagnostics): the pre-exposure window's IRR (an
  exposure that the outcome brings forward or delays shows up before it), the end-of-observation
  probe (an indicator of each case's last ``probe_days`` of observation: an IRR far from 1 means
  the outcome shortens observation, violating SCCS's assumption), days from the latest exposure
  start to each outcome, and observed against expected outcomes by calendar month (expected:
  each case's outcomes shared over months by its observed days).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from ..regression.fit import fit
from ..sccs.data import SccsData


@dataclass
class SccsStudyResult:
    """What ``sccs_study`` returns; every table is a DataFrame.

    irr : the exposure's risk window: coef, irr, se, Wald and profile-likelihood intervals
    attrition : cases and outcomes after each rule
    sccs : the SccsData of the main model; fit : its FitResult
    pre_exposure : IRRs of the diagnostic model (risk window, pre-exposure window, probe)
    time_to_event : per outcome, days since the latest exposure start (NaN if none before)
    observed_expected : by calendar month, observed and expected outcomes
    """

    irr: pd.DataFrame
    attrition: pd.DataFrame
    sccs: SccsData
    fit: object
    pre_exposure: pd.DataFrame
    time_to_event: pd.DataFrame
    observed_expected: pd.DataFrame
    spec: dict = field(default_factory=dict)


def _ids(value, what) -> list[int]:
    one = isinstance(value, int | np.integer) and not isinstance(value, bool)
    values = [value] if one else list(value) if isinstance(value, list | tuple | np.ndarray) \
        else []
    if not values or not all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                             for v in values):
        raise ValueError(f"{what} must be a concept id or a list of concept ids, got {value!r}")
    return [int(v) for v in values]


def sccs_study(con, exposure, outcome, risk_window=(0, 30), pre_window=(-30, -1),
               probe_days: int = 30, age_cuts=None, first_outcome_only: bool = True,
               outcome_descendants: bool = True, other_drugs: bool = False,
               penalty=None) -> SccsStudyResult:
    """Run the SCCS study on a CDM connection (engine.cdm.open_eunomia / open_cdm).

    Parameters
    ----------
    exposure : drug_era ingredient concept id(s) (e.g. diclofenac 1124300); several ids are
        one exposure (an era of any of them), as a drug class
    outcome : condition concept id(s) (e.g. GI haemorrhage 192671)
    risk_window : (a, b) days after the era start (b may be "end", "end+k")
    pre_window : (a, b) before exposure, for the diagnostic model; None leaves it out
    probe_days : length of the end-of-observation probe of the diagnostic model (0: none)
    age_cuts : ages in days at which a new age group starts (adjusts for age)
    other_drugs : also adjust for every other ingredient's drug eras (columns
        ``drug_<concept id>[0,end]``, exposed for the whole era): the multi-drug SCCS of
        Suchard2013, with ``penalty`` (e.g. engine.L2.from_variance(1.0), a Normal prior) on those
        columns only; the exposure's risk window stays unpenalised
    """
    exposures, outcomes = _ids(exposure, "exposure"), _ids(outcome, "outcome")
    found = _query(con, exposures, outcomes, outcome_descendants, other_drugs)
    events, eras, attrition = _cases(found, first_outcome_only, exposures)
    if events.empty:
        raise CohortError(f"no outcome {outcomes} falls inside an observation period; check "
                          "the concept ids.")
    if pre_window is not None and not (isinstance(pre_window[1], int | np.integer)
                                       and pre_window[1] < 0):
        raise CohortError(f"pre_window={tuple(pre_window)} must end before the exposure "
                          "starts (a last day < 0, e.g. (-30, -1)).")
    name = "exposure"
    windows = {name: [tuple(risk_window)]}
    sccs = _build(events, eras, windows, age_cuts)
    column = next((c for c in sccs.names if c.startswith(name + "[")), None)
    if column is None:
        raise CohortError(f"no case has both exposed and unexposed time in the risk window "
                          f"{tuple(risk_window)} of {exposures}: there is nothing to estimate.")
    res = fit(sccs, model="sccs", penalty=penalty if other_drugs else None,
              unpenalized=[column])
    row = res.summary.loc[column]
    profile = res.confint(column).loc[column]
    irr = pd.DataFrame([{"window": column, "coef": row["coef"], "irr": row["irr"],
                         "se": row["se"], "irr_lower": row["irr_lower"],
                         "irr_upper": row["irr_upper"], "profile_lower": np.exp(profile["lower"]),
                         "profile_upper": np.exp(profile["upper"]), "p": row["p"],
                         "cases": int(events["case"].nunique()),
                         "outcomes": int(len(events))}])
    diagnostic_windows = {name: ([tuple(pre_window)] if pre_window else []) + [tuple(risk_window)]}
    probe = None
    if probe_days:
        probe = (0, int(probe_days) - 1)
        diagnostic_windows["end_of_observation"] = [probe]
    own = eras[eras["drug"] == name]
    diag = fit(_build(events, own, diagnostic_windows, age_cuts, probe_days), model="sccs")
    pre = diag.summary[["coef", "irr", "se", "irr_lower", "irr_upper", "p"]].copy()
    return SccsStudyResult(
        irr=irr, attrition=attrition, sccs=sccs, fit=res, pre_exposure=pre,
        time_to_event=_time_to_event(events, own),
        observed_expected=_observed_expected(events),
        spec={"exposure": exposures, "outcome": outcomes, "risk_window": list(risk_window),
              "pre_window": None if pre_window is None else list(pre_window),
              "probe_days": probe_days, "age_cuts": age_cuts,
              "first_outcome_only": first_outcome_only,
              "outcome_descendants": outcome_descendants, "other_drugs": other_drugs,
              "penalty": None if penalty is None or not other_drugs else repr(penalty),
              "days": "from birth, inclusive (R SCCS formatdata)"})


def _query(con, exposures, outcomes, descendants, other_drugs=False) -> dict:
    """Outcomes inside observation periods, with birth dates, and the cases' drug eras."""
    concepts = (f"SELECT descendant_concept_id AS concept_id FROM concept_ancestor "
                f"WHERE ancestor_concept_id IN ({', '.join(map(str, outcomes))}) UNION "
                if descendants else "") + f"SELECT unnest({outcomes}) AS concept_id"
    base = f"""
        WITH outcome_concepts AS ({concepts}),
        outcomes AS (
            SELECT DISTINCT co.person_id, co.condition_start_date AS day
            FROM condition_occurrence co JOIN outcome_concepts oc
              ON co.condition_concept_id = oc.concept_id),
        births AS (
            SELECT person_id, make_date(year_of_birth, coalesce(month_of_birth, 7),
                                        coalesce(day_of_birth, 1)) AS birth
            FROM person),
        observed AS (
            SELECT o.person_id, b.birth, op.observation_period_start_date AS obs_start,
                   op.observation_period_end_date AS obs_end, o.day
            FROM outcomes o
            JOIN observation_period op ON op.person_id = o.person_id
              AND o.day BETWEEN op.observation_period_start_date
                            AND op.observation_period_end_date
            JOIN births b ON b.person_id = o.person_id)"""
    counts = con.execute(base + """
        SELECT (SELECT count(DISTINCT person_id) FROM outcomes) AS persons,
               (SELECT count(*) FROM outcomes) AS outcomes""").df().iloc[0]
    observed = con.execute(base + " SELECT * FROM observed ORDER BY person_id, day").df()
    eras = con.execute(base + f"""
        SELECT DISTINCT ob.person_id, ob.obs_start, de.drug_concept_id AS concept,
               de.drug_era_start_date AS start, de.drug_era_end_date AS stop
        FROM (SELECT DISTINCT person_id, obs_start, obs_end FROM observed) ob
        JOIN drug_era de ON de.person_id = ob.person_id
          AND ({other_drugs} OR de.drug_concept_id IN ({', '.join(map(str, exposures))}))
          AND de.drug_era_start_date <= ob.obs_end
          AND de.drug_era_end_date >= ob.obs_start""").df()
    return {"counts": counts, "observed": observed, "eras": eras}


def _days(dates, birth) -> np.ndarray:
    return (pd.to_datetime(dates) - pd.to_datetime(birth)).dt.days.to_numpy(np.float64)


def _cases(found, first_only, exposures):
    """Events (case, day numbers) and exposure eras in days from birth; the attrition."""
    obs = found["observed"]
    counts = found["counts"]
    rows = [{"rule": "Persons with the outcome", "cases": int(counts["persons"]),
             "outcomes": int(counts["outcomes"])},
            {"rule": "Outcome inside an observation period",
             "cases": int(obs["person_id"].nunique()), "outcomes": len(obs)}]
    if first_only:
        obs = obs[obs["day"] == obs.groupby("person_id")["day"].transform("min")]
        rows.append({"rule": "First outcome only", "cases": int(obs["person_id"].nunique()),
                     "outcomes": len(obs)})
    obs = obs.reset_index(drop=True)
    case = obs["person_id"].astype(str) + ":" + obs["obs_start"].astype(str)
    events = pd.DataFrame({"case": case, "person_id": obs["person_id"],
                           "sta": _days(obs["obs_start"], obs["birth"]),
                           "end": _days(obs["obs_end"], obs["birth"]),
                           "day": _days(obs["day"], obs["birth"]),
                           "date": pd.to_datetime(obs["day"]),
                           "birth": pd.to_datetime(obs["birth"])})
    births = events.drop_duplicates("person_id").set_index("person_id")["birth"]
    eras = found["eras"]
    eras = eras.assign(case=eras["person_id"].astype(str) + ":" + eras["obs_start"].astype(str))
    eras = eras[eras["case"].isin(set(events["case"]))]
    birth = births.loc[eras["person_id"]].to_numpy()
    ours = eras["concept"].isin(set(exposures))
    drug = np.where(ours, "exposure", "drug_" + eras["concept"].astype(str))
    eras = pd.DataFrame({"case": eras["case"].to_numpy(), "drug": drug,
                         "start": _days(eras["start"], birth), "end": _days(eras["stop"], birth)})
    exposed = set(eras.loc[ours.to_numpy(), "case"])
    rows.append({"rule": "Cases with an exposure era", "cases": len(exposed),
                 "outcomes": int(events["case"].isin(exposed).sum())})
    return events, eras, pd.DataFrame(rows)


def _build(events, eras, windows, age_cuts, probe_days=0) -> SccsData:
    """SccsData.from_cases over the events, the exposure eras and, for the diagnostic model,
    the end-of-observation probe as a pseudo-exposure starting probe_days before the end."""
    long = eras
    if probe_days:
        ends = events.drop_duplicates("case")
        long = pd.concat([eras, pd.DataFrame({
            "case": ends["case"].to_numpy(), "drug": "end_of_observation",
            "start": np.maximum(ends["end"] - probe_days + 1, ends["sta"]).to_numpy(),
            "end": ends["end"].to_numpy()})], ignore_index=True)
    return SccsData.from_cases(events, case="case", obs_start="sta", obs_end="end",
                               event_times="day", risk_windows=windows, age_cuts=age_cuts,
                               exposures=long)


def _time_to_event(events, eras) -> pd.DataFrame:
    """Per outcome: days since the latest exposure era start on or before it (NaN if none)."""
    starts = eras.sort_values("start")
    out = pd.merge_asof(events.sort_values("day")[["case", "day"]], starts[["case", "start"]],
                        left_on="day", right_on="start", by="case", direction="backward")
    out["days_from_exposure"] = out["day"] - out["start"]
    return out[["case", "day", "days_from_exposure"]].sort_values(["case", "day"],
                                                                   ignore_index=True)


def _observed_expected(events) -> pd.DataFrame:
    """Observed outcomes per calendar month against the expected, sum over cases of
    n_i x (days of case i in the month) / (days of case i): no month effect."""
    cases = events.groupby("case").agg(sta=("sta", "first"), end=("end", "first"),
                                       birth=("birth", "first"), n=("day", "size"))
    first = cases["birth"] + pd.to_timedelta(cases["sta"], unit="D")
    last = cases["birth"] + pd.to_timedelta(cases["end"], unit="D")
    calendar = pd.date_range(first.min(), last.max(), freq="D")
    month = calendar.month.to_numpy()
    cum = np.zeros((12, calendar.size + 1))
    cum[:, 1:] = np.cumsum(month[None, :] == np.arange(1, 13)[:, None], axis=1)
    lo = (first - calendar[0]).dt.days.to_numpy()
    hi = (last - calendar[0]).dt.days.to_numpy() + 1
    in_month = cum[:, hi] - cum[:, lo]                         # 12 x cases
    share = in_month / in_month.sum(axis=0, keepdims=True)
    observed = np.bincount(events["date"].dt.month.to_numpy() - 1, minlength=12)
    return pd.DataFrame({"month": np.arange(1, 13), "observed": observed,
                         "expected": share @ cases["n"].to_numpy(np.float64)})
