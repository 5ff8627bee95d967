"""engine.standardized_rates and engine.smr: directly standardised rates with Fay-Feuer limits,
their ratios and differences, and standardised mortality ratios with R's poisson.test, against
tests/data/r_standardized_rates.R (R 4.2.2, to 15 digits); the robust variance against
statsmodels' Poisson GLM sandwich carried through the standard's weights; a single stratum
against incidence_rates (Fay-Feuer's limits are then Garwood's)."""
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import SpecificationWarning

import engine
from r_printed import data_frame, sections

R = sections("r_standardized_rates.Rout")
GIVEN = {"<=19": 5500, "20-22": 6000, "23-25": 6000, "26-30": 6500, "31+": 21000}
RATES = {"<=19": 12, "20-22": 9, "23-25": 6, "26-30": 4, "31+": 2.5}


@pytest.fixture(scope="module")
def rossi(rossi_r_weights):
    r = rossi_r_weights.copy()
    r["ageband"] = pd.cut(r["age"], [0, 19, 22, 25, 30, 100],
                          labels=["<=19", "20-22", "23-25", "26-30", "31+"]).astype(str)
    r["g3"] = pd.cut(r["prio"], [-1, 1, 4, 100], labels=["p0-1", "p2-4", "p5+"]).astype(str)
    return r


@pytest.fixture(scope="module")
def cohort(rossi):
    return engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])


def _as_r(result, label):
    rates, ratios = data_frame(R[f"{label} rates"]), data_frame(R[f"{label} ratios"])
    got = result.rates
    assert list(got.index) == [str(g) for g in rates["group"]]
    for column in ("events", "person_time", "crude_rate", "rate", "lower", "upper"):
        np.testing.assert_allclose(got[column], rates[column], rtol=1e-11)
    got = result.comparisons.set_index("group")
    assert list(got.index) == [str(g) for g in ratios["group"]]
    for column in ratios.columns[1:]:
        np.testing.assert_allclose(got[column], ratios[column], rtol=1e-10)


def test_direct_standardisation_as_R(rossi, cohort):
    band = rossi["ageband"].to_numpy()
    result = engine.standardized_rates(cohort, band, by=rossi["fin"].to_numpy())
    assert result.variance == "exact" and result.standard == "the cohort's person-time"
    _as_r(result, "rossi fin by age")
    # the standard is the pooled person-time of each band, and the stratum rates add up
    pooled = rossi.groupby("ageband")["week"].sum()
    np.testing.assert_allclose(result.weights, pooled[result.weights.index] / pooled.sum())
    s = result.strata
    assert s["events"].sum() == rossi["arrest"].sum()
    by_hand = (s["rate"].unstack() * result.weights).sum(axis=1)
    np.testing.assert_allclose(result.rates["rate"], by_hand.to_numpy(), rtol=1e-12)
    given = engine.standardized_rates(cohort, band, by=rossi["fin"].to_numpy(),
                                      standard=pd.Series(GIVEN), per=100, level=0.9)
    assert given.standard == "given"
    _as_r(given, "rossi fin by age given level 0.9")
    _as_r(engine.standardized_rates(cohort, band, by=rossi["g3"].to_numpy(),
                                    standard="reference", reference="p2-4"),
          "rossi prio by age reference")


def test_one_stratum_gives_the_exact_poisson_rates(rossi, cohort):
    """Over one stratum Fay and Feuer's limits are Garwood's: the rates of incidence_rates."""
    one = engine.standardized_rates(cohort, np.zeros(cohort.n), by=rossi["g3"].to_numpy())
    plain = engine.incidence_rates(cohort, by=rossi["g3"].to_numpy())
    for column in ("rate", "lower", "upper"):
        np.testing.assert_allclose(one.rates[column], plain.rates[column], rtol=1e-12)


def _as_r_smr(result, label):
    want = data_frame(R[f"{label} smr"])
    got = result.ratios
    assert list(got.index) == [str(g) for g in want["group"]]
    for column in want.columns[1:]:
        np.testing.assert_allclose(got[column], want[column], rtol=1e-10)


def test_smr_as_R_poisson_test(rossi, cohort):
    band = rossi["ageband"].to_numpy()
    internal = engine.smr(cohort, band, by=rossi["fin"].to_numpy())
    assert internal.expected_from == "the cohort's rates" and internal.variance == "exact"
    _as_r_smr(internal, "rossi fin by age")
    # internally the expected events add up to the observed ones
    assert internal.ratios["expected"].sum() == pytest.approx(rossi["arrest"].sum(), rel=1e-12)
    _as_r_smr(engine.smr(cohort, band, by=rossi["g3"].to_numpy()), "rossi prio by age")
    given = engine.smr(cohort, band, by=rossi["fin"].to_numpy(), reference_rates=RATES,
                       level=0.9)
    assert given.expected_from == "given rates"
    _as_r_smr(given, "rossi fin by age given rates level 0.9")
    few = rossi[rossi["prio"] >= 8]
    _as_r_smr(engine.smr(engine.Cohort.from_frame(few, "week", "arrest", covariates=[]),
                         few["ageband"].to_numpy(), by=few["fin"].to_numpy(),
                         reference_rates={"<=19": 20, "20-22": 15, "23-25": 10, "26-30": 8,
                                          "31+": 5}),
              "rossi prio >= 8 by fin, given rates")


def _glm_cells(frame, cells, cluster):
    """statsmodels' Poisson GLM, one dummy a (group, stratum) cell, the weights as sampling
    weights, and its cluster sandwich without the small-sample factor: the covariance of the
    cells' log rates."""
    model = sm.GLM(frame["arrest"].to_numpy(), cells.astype(float).to_numpy(),
                   family=sm.families.Poisson(), exposure=frame["week"].to_numpy(),
                   var_weights=frame["w"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecificationWarning)
        return model.fit(cov_type="cluster", cov_kwds={"groups": cluster,
                                                       "use_correction": False})


@pytest.mark.parametrize("standard", ["cohort", "given"])
def test_robust_standardised_rates_as_statsmodels(rossi, standard):
    """IPTW-like weights: the sandwich covariance of the cells' rates (statsmodels, clustered
    across groups and strata by prior-arrest class) through the standard's weights."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    cluster = rossi["prio"].clip(upper=12).to_numpy()
    result = engine.standardized_rates(
        cohort, rossi["ageband"].to_numpy(), by=rossi["fin"].to_numpy(), cluster=cluster,
        standard="cohort" if standard == "cohort" else GIVEN)
    assert result.variance == "robust by cluster"
    cells = pd.get_dummies(rossi["fin"].astype(str) + ":" + rossi["ageband"])
    glm = _glm_cells(rossi, cells, cluster)
    rate = np.exp(glm.params)
    cov = np.outer(rate, rate) * glm.cov_params()             # of the cells' rates
    t = rossi.assign(pt=rossi["w"] * rossi["week"]).groupby("ageband")["pt"].sum()
    raw = t if standard == "cohort" else pd.Series(GIVEN)
    weights = (raw / raw.sum())[sorted(GIVEN)].to_numpy()
    A = np.kron(np.eye(2), weights)                           # cells sort as the engine's
    dsr, V = A @ rate, A @ cov @ A.T
    np.testing.assert_allclose(result.rates["rate"], dsr * 1000, rtol=1e-9)
    se = np.sqrt(np.diag(V)) / dsr
    np.testing.assert_allclose(result.rates["lower"], dsr * np.exp(-1.959963984540054 * se)
                               * 1000, rtol=1e-7)
    ratio = result.comparisons.iloc[0]
    se_log = np.sqrt(V[0, 0] / dsr[0] ** 2 + V[1, 1] / dsr[1] ** 2
                     - 2 * V[0, 1] / (dsr[0] * dsr[1]))
    assert ratio["rate_ratio"] == pytest.approx(dsr[1] / dsr[0], rel=1e-9)
    assert ratio["rr_upper"] == pytest.approx(dsr[1] / dsr[0]
                                              * np.exp(1.959963984540054 * se_log), rel=1e-7)


def test_robust_smr_as_statsmodels(rossi):
    """The SMR's sandwich: statsmodels' Poisson GLM of the events on one dummy a group with
    log expected events as the offset (the reference rates fixed)."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    result = engine.smr(cohort, rossi["ageband"].to_numpy(), by=rossi["fin"].to_numpy(),
                        reference_rates=RATES)
    assert result.variance == "robust by row"
    lam = rossi["ageband"].map(RATES).to_numpy() / 1000
    model = sm.GLM(rossi["arrest"].to_numpy(),
                   pd.get_dummies(rossi["fin"]).astype(float).to_numpy(),
                   family=sm.families.Poisson(), exposure=rossi["week"].to_numpy() * lam,
                   var_weights=rossi["w"].to_numpy())
    glm = model.fit(cov_type="HC0")
    np.testing.assert_allclose(result.ratios["smr"], np.exp(glm.params), rtol=1e-9)
    np.testing.assert_allclose(result.ratios["upper"],
                               np.exp(glm.params + 1.959963984540054 * glm.bse), rtol=1e-7)
    np.testing.assert_allclose(result.ratios["p"], glm.pvalues, rtol=1e-6)


def test_undefined_rates_are_named_and_bad_standards_refused(rossi, cohort):
    """A group without person-time in a weighed stratum has no standardised rate (NaN, named);
    a standard or reference rates must cover exactly the cohort's strata."""
    band = rossi["ageband"].to_numpy()
    group = np.where((rossi["ageband"] == "31+") & (rossi["fin"] == 1), 0,
                     rossi["fin"]).astype(str)
    with pytest.warns(engine.DataWarning, match=r"group '1' has no person-time .*31\+"):
        result = engine.standardized_rates(cohort, band, by=group)
    assert np.isnan(result.rates.loc["1", ["rate", "lower", "upper"]].to_numpy(float)).all()
    assert np.isfinite(result.rates.loc["0", "rate"])
    assert result.comparisons[["rate_ratio", "rate_difference"]].isna().all(axis=None)
    # a standard that leaves that stratum out defines it again (a truncated standard)
    truncated = {k: v for k, v in GIVEN.items() if k != "31+"}
    with pytest.raises(ValueError, match=r"missing \['31\+'\]"):
        engine.standardized_rates(cohort, band, by=group, standard=truncated)
    with pytest.raises(ValueError, match=r"unknown \['90\+'\]"):
        engine.standardized_rates(cohort, band, standard={**GIVEN, "90+": 10})
    with pytest.raises(ValueError, match="finite numbers >= 0"):
        engine.standardized_rates(cohort, band, standard={**GIVEN, "31+": -1})
    with pytest.raises(ValueError, match="all zero"):
        engine.standardized_rates(cohort, band, standard={k: 0 for k in GIVEN})
    with pytest.raises(ValueError, match="standard must be"):
        engine.standardized_rates(cohort, band, standard="world")
    with pytest.raises(ValueError, match="standardize_by is required"):
        engine.standardized_rates(cohort, None)
    with pytest.raises(ValueError, match=r"reference_rates must give .* missing \['<=19'\]"):
        engine.smr(cohort, band, reference_rates={k: v for k, v in RATES.items()
                                                  if k != "<=19"})
    with pytest.raises(TypeError, match="dict or Series"):
        engine.smr(cohort, band, reference_rates=[1, 2, 3, 4, 5])
    with pytest.raises(TypeError, match="needs an engine.Cohort"):
        engine.smr(rossi, band)


def test_no_events_give_a_zero_rate_with_a_finite_upper_limit(rossi):
    """A group without events: standardised rate 0, lower limit 0 and Fay-Feuer's upper
    qgamma(1 - a/2, 1, scale = M) (R's epitools gives NaN for the lower), SMR 0."""
    quiet = rossi.assign(arrest=np.where(rossi["fin"] == 1, 0, rossi["arrest"]))
    cohort = engine.Cohort.from_frame(quiet, "week", "arrest", covariates=[])
    band = quiet["ageband"].to_numpy()
    result = engine.standardized_rates(cohort, band, by=quiet["fin"].to_numpy())
    row = result.rates.loc["1"]
    assert row["rate"] == 0 and row["lower"] == 0
    t = quiet[quiet["fin"] == 1].groupby("ageband")["week"].sum()
    M = (result.weights / t[result.weights.index]).max()
    assert row["upper"] == pytest.approx(-np.log(0.025) * M * 1000, rel=1e-12)
    ratios = engine.smr(cohort, band, by=quiet["fin"].to_numpy()).ratios
    assert ratios.loc["1", "smr"] == 0 and ratios.loc["1", "lower"] == 0
