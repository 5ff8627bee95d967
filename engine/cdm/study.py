"""A comparative new-user study from an OMOP CDM in one call (CohortMethod's analysis): the
cohort and its attrition, baseline covariates, a large-scale propensity score, Cox hazard
ratios unadjusted, stratified on PS strata, stratified on 1:k matched sets and weighted by the
PS (overlap weights by default; the robust variance), covariate balance before and after, and
Kaplan-Meier curves by arm."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..data.cohort import Cohort
from ..comparative import (ESTIMANDS, balance_summary, balancing_weights, covariate_balance,
    fit_propensity, match_on_ps, matched_weights, stratify, stratum_weights)
from ..core.errors import Cancelled, DataWarning
from ..descriptive.incidence_rates import incidence_rates
from ..regression.fit import fit
from .cohort import new_user_cohort
from .covariates import baseline_covariates
from .kaplan_meier import kaplan_meier_by_arm

STUDY_STEPS = ("the cohort", "baseline covariates", "the propensity score",
               "the outcome models", "balance and Kaplan-Meier")
"""The study's steps, in order: ``run_study``'s progress counts them."""


@dataclass
class StudyResult:
    """What ``run_study`` returns; every table is a DataFrame ready to show or export.

    cohort : one row per person (person_id, treatment, dates, time, event) plus ps,
        preference, ps_stratum, matched_set (-1 when unmatched) and ps_weight (with weighting)
    attrition : persons per arm after each rule, the last row after matching
    counts : persons, outcomes, person_days per population (all, matched) and arm, and the
        incidence rate per 1,000 person-years with exact 95% limits (rate_lower, rate_upper)
    hazard_ratios : one row per analysis (unadjusted, PS stratified, PS matched, PS weighted):
        hr, lower, upper, p, coef, se (robust for the weighted fit), persons, outcomes
    balance_stratified, balance_matched, balance_weighted : std differences before and after,
        per covariate (balance_weighted None without weighting)
    balance_summary : analysis -> max |std diff| and count above 0.1, before and after
    km, km_matched, km_weighted : Kaplan-Meier by arm (engine.cdm.kaplan_meier_by_arm): all
        persons; matched persons, a comparator counting 1/m of its 1:m set, the band's variance
        robust by matched set; weighted by the PS weights (None without weighting), robust
    propensity : engine.ps.PropensityScore (model, CV curve, non-zero coefficients)
    covariates : engine.cdm.covariates.Covariates (X, names, ref); fits : name -> FitResult
    """

    cohort: pd.DataFrame
    attrition: pd.DataFrame
    counts: pd.DataFrame
    hazard_ratios: pd.DataFrame
    balance_stratified: pd.DataFrame
    balance_matched: pd.DataFrame
    balance_summary: pd.DataFrame
    km: pd.DataFrame
    km_matched: pd.DataFrame
    propensity: object
    covariates: object
    fits: dict
    balance_weighted: pd.DataFrame | None = None
    km_weighted: pd.DataFrame | None = None
    spec: dict = field(default_factory=dict)

    def __str__(self) -> str:
        ps = self.propensity
        return "\n\n".join([
            "Attrition\n" + self.attrition.to_string(index=False),
            "Counts\n" + self.counts.to_string(index=False),
            f"Propensity score: {self.covariates.X.shape[1]} covariates, penalty {ps.penalty}, "
            f"{len(ps.coefficients) - 1} non-zero; equipoise {ps.equipoise:.1%}",
            "Hazard ratios (target vs comparator)\n" + self.hazard_ratios.to_string(
                index=False, float_format=lambda v: f"{v:.4g}"),
            "Balance\n" + self.balance_summary.to_string(float_format=lambda v: f"{v:.3f}")])


def run_study(con, target, comparator, outcome, ps_strata: int = 5, match_ratio: int = 1,
              caliper: float = 0.2, ps_penalty="cv", folds: int = 10, seed: int = 0,
              windows=(365, 30), outcome_covariates: bool = False, outcome_penalty=None,
              ties: str = "breslow", weighting: str | None = "ATO", parallel=None,
              cancel=None, progress=None, **cohort_rules) -> StudyResult:
    """Run the study on a CDM connection (engine.cdm.open_eunomia / open_cdm).

    target, comparator, outcome : concept ids (see engine.cdm.new_user_cohort, which takes the
        ``cohort_rules`` keywords: prior_observation, risk_window_end, ...)
    ps_strata : K PS strata; match_ratio : k of 1:k matching; caliper : SDs of the logit PS
    ps_penalty : "cv" (L1, CV over ``folds`` folds) | engine.L1 / L2 | None
    outcome_covariates : also put the baseline covariates in the outcome models, penalised by
        ``outcome_penalty`` (e.g. engine.L1(lam)); the treatment is never penalised
    weighting : the estimand of a PS-weighted analysis (engine.comparative.ESTIMANDS: "ATO"
        overlap weights, bounded where the arms barely overlap; "ATE" IPTW, ...) or None
    cancel : a threading.Event; once set, engine.Cancelled before the next step
        (``STUDY_STEPS``) or the next cross-validation fit of the propensity model
    progress : ``progress(done, total)`` before each step: ``done`` of the ``total`` steps
    """
    if weighting is not None and weighting not in ESTIMANDS:
        raise ValueError(f"weighting must be one of {list(ESTIMANDS)} or None, got "
                         f"{weighting!r}")
    for name, value in (("ps_strata", ps_strata), ("match_ratio", match_ratio)):
        if isinstance(value, bool) or not (isinstance(value, int | np.integer) and value >= 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if caliper is not None and not (isinstance(caliper, int | float | np.floating)
                                    and np.isfinite(caliper) and caliper > 0):
        raise ValueError(f"caliper must be a positive number of standard deviations of the "
                         f"logit PS (or None: no caliper), got {caliper!r}")

    def step(done: int) -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"study cancelled before {STUDY_STEPS[done]}")
        if progress is not None:
            progress(done, len(STUDY_STEPS))

    targets = [target] if isinstance(target, int) else list(target)
    comparators = [comparator] if isinstance(comparator, int) else list(comparator)
    step(0)
    cohort = new_user_cohort(con, targets, comparators, outcome, **cohort_rules)
    if cohort["treatment"].nunique() < 2:
        raise ValueError("the cohort has persons in only one arm after the rules; see "
                         f"the attrition:\n{cohort.attrs['attrition']}")
    step(1)
    cov = baseline_covariates(con, cohort, windows=windows, exclude=targets + comparators)
    z = cohort["treatment"].to_numpy()
    step(2)
    ps = fit_propensity(cov.X, z, cov.names, penalty=ps_penalty, folds=folds, seed=seed,
                        parallel=parallel, cancel=cancel)
    cohort = cohort.assign(ps=ps.ps, preference=ps.preference,
                           ps_stratum=stratify(ps.ps, ps_strata),
                           matched_set=match_on_ps(ps.logit, z, match_ratio, caliper, seed))
    matched = cohort["matched_set"].to_numpy() >= 0
    if weighting is not None:
        cohort = cohort.assign(ps_weight=balancing_weights(ps.ps, z, weighting))

    step(3)
    design = dict(cov=cov if outcome_covariates else None, penalty=outcome_penalty, ties=ties)
    fits = {"unadjusted": _outcome_fit(cohort, None, **design),
            f"PS stratified ({ps_strata} strata)": _outcome_fit(cohort, "ps_stratum", **design),
            f"PS matched (1:{match_ratio})": _outcome_fit(cohort, "matched_set", matched,
                                                          **design)}
    populations = {"unadjusted": np.ones(len(cohort), bool),
                   f"PS stratified ({ps_strata} strata)": np.ones(len(cohort), bool),
                   f"PS matched (1:{match_ratio})": matched}
    step(4)
    balance_s = covariate_balance(cov.X, cov.names, z, stratum_weights(z, cohort["ps_stratum"]))
    balance_m = covariate_balance(cov.X, cov.names, z, matched_weights(z, cohort["matched_set"]))
    summaries = {"stratified": balance_summary(balance_s), "matched": balance_summary(balance_m)}
    balance_w = None
    if weighting is not None:
        name = f"PS weighted ({weighting})"
        fits[name] = _outcome_fit(cohort, None, weights=cohort["ps_weight"].to_numpy(),
                                  **design)
        populations[name] = np.ones(len(cohort), bool)
        balance_w = covariate_balance(cov.X, cov.names, z, cohort["ps_weight"].to_numpy())
        summaries["weighted"] = balance_summary(balance_w)
    attrition = pd.concat([cohort.attrs["attrition"], pd.DataFrame({
        "rule": [f"Matched on propensity score (1:{match_ratio}, caliper {caliper} SD logit)"],
        "target_persons": [int(np.sum(matched & (z == 1)))],
        "comparator_persons": [int(np.sum(matched & (z == 0)))]})], ignore_index=True)
    return StudyResult(
        cohort=cohort, attrition=attrition,
        counts=pd.concat([_counts(cohort, "all"), _counts(cohort[matched], "matched")],
                         ignore_index=True),
        hazard_ratios=pd.DataFrame([_hazard_ratio(name, res, cohort[populations[name]])
                                    for name, res in fits.items()]),
        balance_stratified=balance_s, balance_matched=balance_m, balance_weighted=balance_w,
        balance_summary=pd.DataFrame(summaries).T,
        km=kaplan_meier_by_arm(cohort),
        km_matched=kaplan_meier_by_arm(cohort[matched], weights=matched_weights(
            z[matched], cohort["matched_set"][matched]), cluster=cohort["matched_set"][matched]),
        km_weighted=None if weighting is None else kaplan_meier_by_arm(
            cohort, weights=cohort["ps_weight"]),
        propensity=ps, covariates=cov, fits=fits,
        spec={"target": targets, "comparator": comparators, "outcome": outcome,
              "ps_strata": ps_strata, "match_ratio": match_ratio, "caliper": caliper,
              "ps_penalty": str(ps.penalty), "folds": folds, "seed": seed,
              "windows": list(windows), "outcome_covariates": outcome_covariates,
              "outcome_penalty": str(outcome_penalty), "ties": ties, "weighting": weighting,
              **cohort_rules})


def _outcome_fit(cohort, strata, rows=None, cov=None, penalty=None, ties="breslow",
                 weights=None):
    """Cox model of the outcome on treatment (and covariates), stratified on ``strata``, with
    case ``weights`` (PS weights: the fit's variance is then the robust one)."""
    rows = np.ones(len(cohort), bool) if rows is None else rows
    part = cohort[rows]
    X = part[["treatment"]].to_numpy(np.float64)
    names = ["treatment"]
    if cov is not None:
        X = sp.hstack([sp.csc_matrix(X), cov.X[np.flatnonzero(rows)]], format="csc")
        names += cov.names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        c = Cohort.from_arrays(time=part["time"], event=part["event"], X=X, names=names,
                               strata=None if strata is None else part[strata].to_numpy(),
                               weights=None if weights is None else weights[rows])
        return fit(c, ties=ties, penalty=penalty, unpenalized=["treatment"])


def _hazard_ratio(name, res, population) -> dict:
    row = res.summary.loc["treatment"]
    return {"analysis": name, "hr": row["hr"], "lower": row["hr_lower"],
            "upper": row["hr_upper"], "p": row["p"], "coef": row["coef"], "se": row["se"],
            "persons": len(population), "outcomes": int(population["event"].sum())}


def _counts(population, label) -> pd.DataFrame:
    """persons, outcomes and person-days per arm, and the incidence rate per 1,000
    person-years with its exact 95% limits (engine.incidence_rates: R's poisson.test)."""
    rates = incidence_rates(
        Cohort.from_arrays(time=population["time"], event=population["event"],
                           X=np.zeros((len(population), 0))),
        by=np.where(population["treatment"] == 1, "target", "comparator"),
        per=365.25 * 1000).rates
    out = []
    for arm, value in (("target", 1), ("comparator", 0)):
        rows = population[population["treatment"] == value]
        rate = rates.loc[arm] if arm in rates.index else pd.Series(np.nan, rates.columns)
        out.append({"population": label, "arm": arm, "persons": len(rows),
                    "outcomes": int(rows["event"].sum()), "person_days": float(rows["time"].sum()),
                    "rate_per_1000_py": rate["rate"], "rate_lower": rate["lower"],
                    "rate_upper": rate["upper"]})
    return pd.DataFrame(out)
