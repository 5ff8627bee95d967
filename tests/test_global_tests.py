"""engine.global_tests against R's saved coxph output (aml: tests/doaml.Rout.save; ovarian and
lung: tests/Examples/survival-Ex.Rout.save), lifelines and statsmodels."""
import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from lifelines.datasets import load_lung
from statsmodels.duration.hazard_regression import PHReg

import engine
from r_survival_data import AML, OVARIAN


@pytest.mark.parametrize("ties, lr, p, z", [("breslow", 3.3, 0.06945, 1.765),
                                            ("efron", 3.38, 0.06581, 1.788)])
def test_aml_against_R(ties, lr, p, z):
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    tests = engine.global_tests(engine.fit(cohort, ties=ties), cohort)
    assert round(tests.loc["likelihood ratio", "statistic"], 2 if ties == "efron" else 1) == lr
    assert tests.loc["likelihood ratio", "p"] == pytest.approx(p, abs=5e-6)
    assert np.sqrt(tests.loc["wald", "statistic"]) == pytest.approx(z, abs=5e-4)


def test_score_test_against_R_and_the_logrank():
    # coxph(Surv(futime, fustat) ~ rx, ovarian, ties="breslow"): sctest 1.063 (no tied times,
    # so it is survdiff's 1.06274)
    cohort = engine.Cohort.from_frame(OVARIAN, "futime", "fustat", covariates=["rx"])
    tests = engine.global_tests(engine.fit(cohort, ties="breslow"), cohort)
    assert round(tests.loc["score", "statistic"], 3) == 1.063
    assert tests.loc["score", "statistic"] == pytest.approx(
        engine.logrank_test(cohort, "rx").statistic, rel=1e-10)
    # coxph(Surv(time, status) ~ factor(pat.karno) + strata(inst), lung): 21.368 on 7 df
    lung = load_lung().dropna(subset=["inst", "pat.karno"])
    lung = lung.assign(karno=lung["pat.karno"].astype(int).astype(str))
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["karno"],
                                      strata="inst")
    tests = engine.global_tests(engine.fit(cohort, ties="efron"), cohort)
    assert round(tests.loc["score", "statistic"], 3) == 21.368
    assert tests.loc["score", "df"] == 7


def test_rossi_against_lifelines_and_statsmodels(rossi):
    names = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names)
    res = engine.fit(cohort, ties="efron")
    tests = engine.global_tests(res, cohort)
    cph = CoxPHFitter().fit(rossi, "week", "arrest")
    lr = cph.log_likelihood_ratio_test()
    assert tests.loc["likelihood ratio", "statistic"] == pytest.approx(lr.test_statistic,
                                                                       rel=1e-6)
    beta = cph.params_[names].to_numpy()
    wald = beta @ np.linalg.solve(cph.variance_matrix_.loc[names, names].to_numpy(), beta)
    assert tests.loc["wald", "statistic"] == pytest.approx(wald, rel=1e-6)
    model = PHReg(rossi["week"], rossi[names].to_numpy(float), status=rossi["arrest"],
                  ties="efron")
    u0, h0 = model.score(np.zeros(7)), model.hessian(np.zeros(7))
    assert tests.loc["score", "statistic"] == pytest.approx(u0 @ np.linalg.solve(-h0, u0),
                                                            rel=1e-9)
    assert (tests["df"] == 7).all()
