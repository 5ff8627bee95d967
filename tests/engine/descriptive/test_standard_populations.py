"""engine.standard_population and engine.standardized_rates(standard=<name>): rates standardised
to the WHO 2000-2025, Segi 1960 and US 2000 standards, against tests/data/r_standardized_rates.R
(R 4.2.2, the weights typed there from the publications, the Fay-Feuer formula in base R, to
15 digits): ages at release in the standard's groups, and attained ages cut at its limits by
engine.split_lexis as by R's survSplit."""
import numpy as np
import pandas as pd
import pytest

import engine
from r_printed import data_frame, sections

R = sections("r_standardized_rates.Rout")


@pytest.fixture(scope="module")
def rossi(rossi_r_weights):
    r = rossi_r_weights.copy()
    r["g3"] = pd.cut(r["prio"], [-1, 1, 4, 100], labels=["p0-1", "p2-4", "p5+"]).astype(str)
    return r


def _as_r(result, label):
    rates, ratios = data_frame(R[f"{label} rates"]), data_frame(R[f"{label} ratios"])
    assert list(result.rates.index) == [str(g) for g in rates["group"]]
    for column in ("events", "person_time", "crude_rate", "rate", "lower", "upper"):
        np.testing.assert_allclose(result.rates[column], rates[column], rtol=1e-11)
    got = result.comparisons.set_index("group")
    for column in ratios.columns[1:]:
        np.testing.assert_allclose(got[column], ratios[column], rtol=1e-10)


@pytest.mark.parametrize("name, groups, first, last, total", [
    ("who2000", 21, "0-4", "100+", 100_035),        # as printed: the WHO's own rounding
    ("segi1960", 18, "0-4", "85+", 100_000),
    ("esp2013", 19, "0-4", "90+", 100_000),
    ("us2000", 11, "0", "85+", 1_000_000),
])
def test_standards_as_published(name, groups, first, last, total):
    table = engine.standard_population(name)
    assert len(table) == groups and table.index[0] == first and table.index[-1] == last
    assert table["weight"].sum() == total and (table["weight"] > 0).all()
    assert table["lower"].iloc[0] == 0 and np.isinf(table["upper"].iloc[-1])
    np.testing.assert_array_equal(table["upper"].to_numpy()[:-1], table["lower"].to_numpy()[1:])
    assert table.attrs["per"] in (100_000, 1_000_000) and table.attrs["title"]
    assert name in engine.STANDARD_POPULATIONS


def test_ages_at_release_standardised_as_R(rossi):
    """Ages as a numeric covariate, as one number per row, or as the standard's labels give
    the same rates; the weights are the standard's over the groups the cohort has."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["age"])
    fin = rossi["fin"].to_numpy()
    who = engine.standardized_rates(cohort, "age", by=fin, standard="who2000")
    _as_r(who, "rossi fin by age at release, who2000")
    table = engine.standard_population("who2000")
    assert list(who.weights.index) == ["15-19", "20-24", "25-29", "30-34", "35-39", "40-44"]
    np.testing.assert_allclose(who.weights, table.loc[who.weights.index, "weight"]
                               / table.loc[who.weights.index, "weight"].sum(), rtol=1e-15)
    assert who.standard.startswith("the WHO World Standard Population 2000-2025 (the 6 of its "
                                   "21 age groups")
    as_numbers = engine.standardized_rates(cohort, rossi["age"].to_numpy(float) + 0.5, by=fin,
                                           standard="who2000")
    labels = pd.cut(rossi["age"], [*table["lower"], np.inf], right=False,
                    labels=table.index).astype(str).to_numpy()
    as_labels = engine.standardized_rates(cohort, labels, by=fin, standard="who2000")
    for other in (as_numbers, as_labels):
        pd.testing.assert_frame_equal(other.rates, who.rates)
    _as_r(engine.standardized_rates(cohort, "age", by=rossi["g3"].to_numpy(),
                                    standard="us2000"), "rossi prio by age at release, us2000")
    _as_r(engine.standardized_rates(cohort, "age", by=fin, standard="segi1960", per=100,
                                    level=0.9),
          "rossi fin by age at release, segi1960, level 0.9")


def test_attained_ages_cut_at_the_standards_limits_as_R(rossi):
    """split_lexis at every limit of the WHO standard (a year of follow-up taken as four,
    so that pieces cross them): its bands are the standard's groups, as R's survSplit
    pieces."""
    breaks = engine.standard_population("who2000")["lower"].to_numpy()[1:]
    pieces = engine.split_lexis(rossi, "week", "arrest", "age", breaks, unit=13.045)
    assert len(pieces) == int(data_frame(R["rossi attained age who2000 pieces"])["rows"][0])
    cohort = engine.Cohort.from_frame(pieces, "week", "arrest", start="start", id="id",
                                      covariates=[])
    result = engine.standardized_rates(cohort, pieces["band"].to_numpy(),
                                       by=pieces["fin"].to_numpy(), standard="who2000")
    _as_r(result, "rossi fin by attained age, who2000")
    assert result.weights.index[-1] == "45-49"


def test_smr_in_a_standards_age_groups_as_R(rossi):
    """smr(age_groups=<name>) places the ages in the standard's groups; a national table's
    rates for groups the cohort lacks are left aside, a label it does not know is named."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["age"])
    fin = rossi["fin"].to_numpy()
    for result, label in (
            (engine.smr(cohort, "age", by=fin, age_groups="who2000"),
             "rossi fin by age at release, who2000 groups"),
            (engine.smr(cohort, "age", by=fin, age_groups="who2000",
                        reference_rates={"10-14": 20, "15-19": 11, "20-24": 8, "25-29": 5.5,
                                         "30-34": 4, "35-39": 3, "40-44": 2.5, "45-49": 2}),
             "rossi fin by age at release, who2000 groups, given rates")):
        want = data_frame(R[f"{label} smr"])
        for column in want.columns[1:]:
            np.testing.assert_allclose(result.ratios[column], want[column], rtol=1e-10)
    with pytest.raises(ValueError, match=r"unknown \['15 to 19'\]"):
        engine.smr(cohort, "age", by=fin, age_groups="who2000",
                   reference_rates={"15 to 19": 11, "15-19": 11, "20-24": 8, "25-29": 5.5,
                                    "30-34": 4, "35-39": 3, "40-44": 2.5})


def test_bad_ages_and_groups_are_named(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=["age", "fin"])
    ages = rossi["age"].to_numpy(float)
    ages[[3, 9]] = [-1.0, np.nan]
    with pytest.raises(ValueError, match=r"ages in years .* rows \[3, 9\] hold \[-1.0, nan\]"):
        engine.standardized_rates(cohort, ages, standard="esp2013")
    coarse = engine.split_lexis(rossi, "week", "arrest", "age", [20, 30], unit=13.045)
    coarse_cohort = engine.Cohort.from_frame(coarse, "week", "arrest", start="start", id="id",
                                             covariates=[])
    with pytest.raises(ValueError, match=r"holds \[.*'<= 20'.*not age groups of the WHO"):
        engine.standardized_rates(coarse_cohort, coarse["band"].to_numpy(),
                                  standard="who2000")
    with pytest.raises(ValueError, match="unknown standard population 'world'"):
        engine.standard_population("world")
    with pytest.raises(ValueError, match="one per row"):
        engine.standardized_rates(cohort, ages[:10], standard="who2000")
    strata = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], strata=["fin"])
    with pytest.raises(ValueError, match="not the strata column 'fin'"):
        engine.standardized_rates(strata, "fin", standard="segi1960")
