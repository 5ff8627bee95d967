"""The OHDSI teaching study on the bundled Eunomia GiBleed CDM, end to end: celecoxib (1118084)
vs diclofenac (1124300) new users, GI haemorrhage (192671 and descendants), CohortMethod's
design; hazard ratios checked against statsmodels PHReg on the same rows."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from lifelines import KaplanMeierFitter
from lifelines.exceptions import StatisticalWarning
from scipy.stats import chi2
from statsmodels.duration.hazard_regression import PHReg

import engine
from engine.cdm import STUDY_STEPS, new_user_cohort, open_cdm, open_eunomia, run_study

CELECOXIB, DICLOFENAC, GI_BLEED = 1118084, 1124300, 192671
pytestmark = pytest.mark.slow   # the Eunomia CDM and two studies: about 20 s


@pytest.fixture(scope="module")
def eunomia(tmp_path_factory):
    return open_eunomia(tmp_path_factory.mktemp("cdm") / "eunomia.duckdb")


@pytest.fixture(scope="module")
def study(eunomia):
    return run_study(eunomia, CELECOXIB, DICLOFENAC, GI_BLEED, ps_strata=5, match_ratio=1)


def test_eunomia_tables(eunomia):
    count = {t: eunomia.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
             for t in ("person", "observation_period", "drug_era", "condition_occurrence")}
    # 5,343 observation periods, 2,649 of them naming persons not in person
    assert count == {"person": 2694, "observation_period": 2694, "drug_era": 52508,
                     "condition_occurrence": 65332}


def test_cohort_sizes(study):
    a = study.attrition
    assert a["target_persons"].tolist() == [1844, 1844, 1800, 1800, 1800, 1800, 830]
    assert a["comparator_persons"].tolist() == [850, 850, 830, 830, 830, 830, 830]
    counts = study.counts.set_index(["population", "arm"])
    columns = ["persons", "outcomes", "person_days"]
    assert counts.loc[("all", "target"), columns].tolist() == [1800, 113, 54481.0]
    assert counts.loc[("all", "comparator"), columns].tolist() == [830, 46, 25102.0]
    # the rate per 1,000 person-years with Garwood's exact limits, from the chi-square
    for (_, _), row in counts.iterrows():
        years = row["person_days"] / 365.25
        assert row["rate_per_1000_py"] == pytest.approx(1000 * row["outcomes"] / years,
                                                        rel=1e-12)
        d = row["outcomes"]
        assert row["rate_lower"] == pytest.approx(500 * chi2.ppf(0.025, 2 * d) / years,
                                                  rel=1e-10)
        assert row["rate_upper"] == pytest.approx(500 * chi2.ppf(0.975, 2 * d + 2) / years,
                                                  rel=1e-10)
    assert study.cohort["person_id"].is_unique


def test_hazard_ratios_against_statsmodels(study):
    c = study.cohort
    hr = study.hazard_ratios.set_index("analysis")
    plain = PHReg(c["time"], c[["treatment"]], status=c["event"], ties="breslow").fit()
    assert np.log(hr.loc["unadjusted", "hr"]) == pytest.approx(plain.params[0], rel=1e-6)
    assert hr.loc["unadjusted", "se"] == pytest.approx(plain.bse[0], rel=1e-5)
    strat = PHReg(c["time"], c[["treatment"]], status=c["event"], strata=c["ps_stratum"],
                  ties="breslow").fit()
    assert np.log(hr.loc["PS stratified (5 strata)", "hr"]) == pytest.approx(strat.params[0],
                                                                             rel=1e-6)
    m = c[c["matched_set"] >= 0]
    matched = PHReg(m["time"], m[["treatment"]], status=m["event"], strata=m["matched_set"],
                    ties="breslow").fit()
    assert np.log(hr.loc["PS matched (1:1)", "hr"]) == pytest.approx(matched.params[0], rel=1e-6)
    assert (hr["lower"] < hr["hr"]).all() and (hr["hr"] < hr["upper"]).all()


def test_propensity_and_balance(study):
    ps = study.propensity
    assert ps.cv is not None and len(ps.coefficients) > 1
    assert 0 < ps.equipoise <= 1
    summary = study.balance_summary
    assert summary.loc["stratified", "imbalanced_before"] > 0
    assert summary.loc["stratified", "max_abs_std_diff_after"] < \
        summary.loc["stratified", "max_abs_std_diff_before"]
    assert summary.loc["matched", "max_abs_std_diff_after"] < \
        summary.loc["matched", "max_abs_std_diff_before"]
    matched = study.cohort[study.cohort["matched_set"] >= 0]
    assert matched.groupby("matched_set")["treatment"].agg(["size", "sum"]).eq([2, 1]).all().all()
    assert "condition 365d: Diverticular disease" in set(study.balance_stratified["covariate"])
    assert set(study.km["arm"]) == {"target", "comparator"}
    assert study.km.groupby("arm")["survival"].apply(lambda s: s.is_monotonic_decreasing).all()


def test_outcome_model_with_penalised_covariates(eunomia):
    res = run_study(eunomia, CELECOXIB, DICLOFENAC, GI_BLEED, ps_penalty=engine.L1(5.0),
                    outcome_covariates=True, outcome_penalty=engine.L1(5.0))
    fit = res.fits["PS stratified (5 strata)"]
    assert not fit.penalized["treatment"] and fit.penalized.drop("treatment").all()
    assert np.isfinite(res.hazard_ratios["hr"]).all()


def test_parquet_cdm_gives_the_same_cohort(eunomia, tmp_path):
    for (table,) in eunomia.execute("SELECT table_name FROM information_schema.tables")\
            .fetchall():
        eunomia.execute(f"COPY {table} TO '{tmp_path / table}.parquet' (FORMAT parquet)")
    con = open_cdm(tmp_path)
    a = new_user_cohort(con, CELECOXIB, DICLOFENAC, GI_BLEED)
    b = new_user_cohort(eunomia, CELECOXIB, DICLOFENAC, GI_BLEED)
    assert a[["person_id", "treatment", "time", "event"]].equals(
        b[["person_id", "treatment", "time", "event"]])


def test_missing_tables_are_named(tmp_path):
    with pytest.raises(engine.CohortError, match="lacks table"):
        open_cdm(tmp_path)


def test_ps_weighted_analysis(study):
    """Overlap weights (treated 1 - e, comparators e: their definition), the weighted Cox fit
    with its robust SE equal to engine.fit on the same rows, and balance improved."""
    c = study.cohort
    e = c["ps"].to_numpy()
    np.testing.assert_allclose(c["ps_weight"], np.where(c["treatment"] == 1, 1 - e, e),
                               rtol=1e-15)
    hr = study.hazard_ratios.set_index("analysis").loc["PS weighted (ATO)"]
    cohort = engine.Cohort.from_frame(c, time="time", event="event", covariates=["treatment"],
                                      weights="ps_weight")
    want = engine.fit(cohort, ties="breslow")
    assert want.variance == "robust" and study.fits["PS weighted (ATO)"].variance == "robust"
    assert hr["coef"] == pytest.approx(want.coef["treatment"], rel=1e-10)
    assert hr["se"] == pytest.approx(want.se_robust["treatment"], rel=1e-10)
    assert hr["se"] != pytest.approx(want.se_model["treatment"], rel=1e-3)
    summary = study.balance_summary.loc["weighted"]
    assert summary["max_abs_std_diff_after"] < summary["max_abs_std_diff_before"]
    # the weighted population's curves: lifelines' weighted Kaplan-Meier, R's robust band
    for arm, z in (("target", 1), ("comparator", 0)):
        rows = c[c["treatment"] == z]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticalWarning)   # its variance, not used
            km = KaplanMeierFitter().fit(rows["time"], rows["event"], weights=rows["ps_weight"])
        got = study.km_weighted[study.km_weighted["arm"] == arm].set_index("time")
        np.testing.assert_allclose(got["survival"],
                                   km.survival_function_.iloc[:, 0].loc[got.index], rtol=1e-12)
        assert (got["std_err"].iloc[1:] > 0).all()
    with pytest.raises(ValueError, match="weighting must be one of"):
        run_study(None, CELECOXIB, DICLOFENAC, GI_BLEED, weighting="IPTW")


def test_progress_counts_the_steps_and_cancel_stops_between_them(eunomia):
    cancel, seen = threading.Event(), []

    def progress(done, total):
        seen.append((done, total))
        if done == 1:           # while the baseline covariates are extracted
            cancel.set()

    with pytest.raises(engine.Cancelled, match="before the propensity score"):
        run_study(eunomia, CELECOXIB, DICLOFENAC, GI_BLEED, cancel=cancel, progress=progress)
    assert seen == [(0, len(STUDY_STEPS)), (1, len(STUDY_STEPS))]
