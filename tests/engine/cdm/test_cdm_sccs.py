"""engine.cdm.sccs_study on Eunomia (diclofenac and GI haemorrhage): the IRR equals statsmodels'
ConditionalPoisson on per-case exposed and unexposed days counted here from the raw CDM tables
by plain day sets; attrition counts equal direct SQL counts; the diagnostics add up."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.discrete.conditional_models import ConditionalPoisson

import engine

DICLOFENAC, GI_BLEED = 1124300, 192671


@pytest.fixture(scope="module")
def con():
    return engine.cdm.open_eunomia()


@pytest.fixture(scope="module")
def study(con):
    with pytest.warns(engine.MonotoneLikelihoodWarning, match=r"exposure\[-30,-1\]"):
        return engine.cdm.sccs_study(con, exposure=DICLOFENAC, outcome=GI_BLEED,
                                     risk_window=(0, 30))


def _per_case_days(con):
    """Two rows per case (exposed, unexposed): days and outcomes, from day sets."""
    first = con.execute(f"""
        SELECT co.person_id, min(co.condition_start_date) AS day
        FROM condition_occurrence co
        WHERE co.condition_concept_id IN (SELECT descendant_concept_id FROM concept_ancestor
                                          WHERE ancestor_concept_id = {GI_BLEED})
        GROUP BY co.person_id""").df()
    obs = con.execute("SELECT person_id, observation_period_start_date AS s, "
                      "observation_period_end_date AS e FROM observation_period").df()
    eras = con.execute(f"SELECT person_id, drug_era_start_date AS start FROM drug_era "
                       f"WHERE drug_concept_id = {DICLOFENAC}").df()
    cases = first.merge(obs, on="person_id")
    cases = cases[(cases["day"] >= cases["s"]) & (cases["day"] <= cases["e"])]
    rows = []
    for _, c in cases.iterrows():
        s, e, day = (pd.Timestamp(c[k]) for k in ("s", "e", "day"))
        exposed = set()
        for start in eras.loc[eras["person_id"] == c["person_id"], "start"]:
            lo = max(pd.Timestamp(start), s)
            hi = min(pd.Timestamp(start) + pd.Timedelta(days=30), e)
            exposed |= set(pd.date_range(lo, hi)) if lo <= hi else set()
        total = (e - s).days + 1
        hit = float(day in exposed)
        rows.append((c["person_id"], 1.0, len(exposed), hit))
        rows.append((c["person_id"], 0.0, total - len(exposed), 1.0 - hit))
    out = pd.DataFrame(rows, columns=["person", "x", "days", "events"])
    return cases, out[out["days"] > 0]


def test_irr_against_statsmodels_on_day_sets(con, study):
    cases, days = _per_case_days(con)
    with pytest.warns(Warning, match="no within-group variance"):   # unexposed: one row
        model = ConditionalPoisson(days["events"], days[["x"]], groups=days["person"],
                                   offset=np.log(days["days"]))
    rate = days.groupby("x")["events"].sum() / days.groupby("x")["days"].sum()
    crude = np.log(rate[1.0] / rate[0.0])          # a start that keeps Newton from overflowing
    ref = model.fit(start_params=np.array([crude]), method="newton", maxiter=100, tol=1e-14,
                    disp=0)
    row = study.irr.iloc[0]
    assert row["coef"] == pytest.approx(ref.params["x"], rel=1e-6)
    assert row["se"] == pytest.approx(ref.bse["x"], rel=1e-6)
    assert row["irr"] == pytest.approx(np.exp(ref.params["x"]), rel=1e-6)
    assert row["profile_lower"] < row["irr"] < row["profile_upper"]
    assert row["cases"] == len(cases)


def test_attrition_and_diagnostics(con, study):
    persons = con.execute(f"""
        SELECT count(DISTINCT person_id) FROM condition_occurrence
        WHERE condition_concept_id IN (SELECT descendant_concept_id FROM concept_ancestor
                                       WHERE ancestor_concept_id = {GI_BLEED})""").fetchone()[0]
    att = study.attrition.set_index("rule")
    assert att.loc["Persons with the outcome", "cases"] == persons
    assert att.loc["First outcome only", "outcomes"] == study.sccs.n_events
    oe = study.observed_expected
    assert oe["observed"].sum() == study.sccs.n_events
    assert oe["expected"].sum() == pytest.approx(study.sccs.n_events, rel=1e-12)
    latest = con.execute(f"""
        WITH first AS (
            SELECT person_id, min(condition_start_date) AS day FROM condition_occurrence
            WHERE condition_concept_id IN (SELECT descendant_concept_id FROM concept_ancestor
                                           WHERE ancestor_concept_id = {GI_BLEED})
            GROUP BY person_id)
        SELECT f.person_id, date_diff('day', max(d.drug_era_start_date), f.day) AS days
        FROM first f
        JOIN observation_period op ON op.person_id = f.person_id
          AND f.day BETWEEN op.observation_period_start_date AND op.observation_period_end_date
        JOIN drug_era d ON d.person_id = f.person_id AND d.drug_concept_id = {DICLOFENAC}
          AND d.drug_era_start_date <= f.day
          AND d.drug_era_end_date >= op.observation_period_start_date
        GROUP BY f.person_id, f.day""").df()
    tte = study.time_to_event["days_from_exposure"].dropna().sort_values().to_numpy()
    np.testing.assert_array_equal(tte, np.sort(latest["days"].to_numpy(np.float64)))
    pre = study.pre_exposure
    assert list(pre.index) == ["exposure[-30,-1]", "exposure[0,30]",
                               "end_of_observation[0,29]"]
    assert pre.loc["exposure[-30,-1]", "coef"] == -np.inf     # no outcome in the 30 days before


def test_age_adjusted_study_against_statsmodels(con):
    """age_cuts (ages in days) add age groups; the fit equals statsmodels on the study's eras."""
    cuts = [365 * 36, 365 * 40, 365 * 44]          # Eunomia's bleeds all fall at ages 30-50
    with pytest.warns(engine.MonotoneLikelihoodWarning):
        st = engine.cdm.sccs_study(con, exposure=DICLOFENAC, outcome=GI_BLEED,
                                   risk_window=(0, 30), age_cuts=cuts)
    assert st.sccs.names == ["exposure[0,30]", "age[13140,14600)", "age[14600,16060)",
                             "age[16060,inf)"]
    f = st.sccs.to_frame()
    with pytest.warns(Warning, match="no within-group variance"):    # one-era cases: l = 0
        model = ConditionalPoisson(f["events"], f[st.sccs.names], groups=f["case"],
                                   offset=np.log(f["length"]))
    ref = model.fit(start_params=np.array([4.0, 2.0, 2.0, 0.0]), method="newton", maxiter=100,
                    tol=1e-14, disp=0)
    np.testing.assert_allclose(st.fit.coef.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    assert st.irr.loc[0, "irr"] == pytest.approx(np.exp(ref.params.iloc[0]), rel=1e-6)


def test_multi_drug_study_meets_kkt(con):
    """other_drugs=True adds every other ingredient's eras under a Normal prior (Suchard2013's
    multi-drug SCCS); the exposure stays unpenalised.  The optimum meets its conditions,
    with the gradient from the brute-force conditional likelihood."""
    from sccs_oracles import brute_gradient

    lam = engine.L2.from_variance(1.0).lam
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", engine.DataWarning)           # drugs without contrast
        warnings.simplefilter("ignore", engine.MonotoneLikelihoodWarning)   # diagnostic model
        st = engine.cdm.sccs_study(con, exposure=DICLOFENAC, outcome=GI_BLEED,
                                   risk_window=(0, 30), other_drugs=True,
                                   penalty=engine.L2(lam))
    names = st.sccs.names
    assert "exposure[0,30]" in names and len(names) > 20
    assert all(n == "exposure[0,30]" or n.startswith("drug_") for n in names)
    f = st.sccs.to_frame()
    b = st.fit.coef.to_numpy()
    g = brute_gradient(f["case"].to_numpy(), f["length"].to_numpy(), f["events"].to_numpy(),
                       f[names].to_numpy(), b)
    penalised = np.array([n != "exposure[0,30]" for n in names])
    np.testing.assert_allclose(g[~penalised], 0.0, atol=1e-6)
    np.testing.assert_allclose(g[penalised], lam * b[penalised], atol=1e-6)
    assert st.irr.loc[0, "irr"] == pytest.approx(np.exp(b[names.index("exposure[0,30]")]))
