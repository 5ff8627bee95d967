"""docs/guide/rates_study.md runs as it stands, and its numbers are R's: the WHO-standardised
rate and the SMRs against given rates (tests/data/r_standardized_rates.Rout), the
piecewise-exponential Poisson model (tests/data/r_poisson.Rout), and a model of fin with
age and priors whose adjusted rates lie between the crude ones' reach."""

import numpy as np
import pytest

from guides import run_guide
from r_printed import data_frame, sections


@pytest.fixture(scope="module")
def study() -> dict:
    return run_guide("rates_study.md")


def test_the_study_runs_and_gives_r_numbers(study):
    rates = sections("r_standardized_rates.Rout")
    who = data_frame(rates["rossi fin by age at release, who2000 rates"])
    np.testing.assert_allclose(study["standardized"].rates["rate"], who["rate"], rtol=1e-11)
    np.testing.assert_allclose(study["standardized"].rates["upper"], who["upper"], rtol=1e-11)
    smr = data_frame(rates["rossi fin by age at release, who2000 groups, given rates smr"])
    np.testing.assert_allclose(study["smr"].ratios["smr"], smr["smr"], rtol=1e-11)
    np.testing.assert_allclose(study["smr"].ratios["p"], smr["p"], rtol=1e-9)
    poisson = data_frame(sections("r_poisson.Rout")["rossi bands"]).set_index("term")
    res = study["res"]
    assert res.coef["fin"] == pytest.approx(poisson.loc["fin", "coef"], rel=1e-6)
    assert res.coef["follow-up > 40"] == pytest.approx(poisson.loc["b3", "coef"], rel=1e-6)
    adjusted = study["adjusted"]
    assert adjusted.contrasts["ratio"].iloc[0] == pytest.approx(np.exp(res.coef["fin"]),
                                                                rel=1e-9)
    crude = study["crude"].rates["rate"].to_numpy()
    assert crude[1] < adjusted.rates["rate"].iloc[1] < adjusted.rates["rate"].iloc[0] < crude[0]
