"""engine.ph_test, scaled_schoenfeld and concordance of Cox fits with cut points (a coefficient
that changes at given times) against R: cox.zph and concordance of coxph fitted to survSplit
data, each interval's coefficient a column of its own.  R 4.2.2, survival 3.5-3: the script is
tests/data/r_zph_cut_points.R and what it printed tests/data/r_zph_cut_points.Rout."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

SAMPLE = Path(__file__).parents[3] / "sample_data"
ROSSI = pd.read_csv(SAMPLE / "rossi.csv")
JASA1 = pd.read_csv(SAMPLE / "jasa1.csv")
FIN = ["fin[0,20)", "fin[20,inf)"]

# R's cox.zph(...)$table: chisq by term and GLOBAL (df 1 a term)
R_ZPH = {
    "efron km": [1.187204614885315, 0.606973612939209, 6.092516398117549, 0.490214101439376,
                 8.866494867716153],
    "efron identity": [1.545177099299715, 0.925074943927151, 6.752191538482461,
                       0.398300828088275, 10.165127054593667],
    "breslow km": [1.187475516727290, 0.604154822301251, 6.060660052291703, 0.481679469237546,
                   8.818414326011297],
    "efron strata km": [1.1349668906826780, 0.6312148736158002, 11.1358438078298967,
                        0.0468564435589882, 13.1286134251948816],
}
# R's coef(fit) where the script prints it: fin1, fin2, age, prio
R_COEF = {"efron km": [-0.0772722837873933, -0.4960253101382514, -0.0670138424722946,
                       0.0979699268866339],
          "efron strata km": [-0.0853090917896732, -0.4975199143158039, -0.0600091701110971,
                              0.0890132353243443]}


def rossi_fit(ties="efron", strata=None):
    cohort = engine.Cohort.from_frame(ROSSI, "week", "arrest", covariates=["fin", "age", "prio"],
                                      strata=strata)
    return engine.fit(cohort, ties=ties, cut_points={"fin": [20]})


def check_table(table, chisq, names):
    assert table.index.tolist() == [*names, "GLOBAL"]
    np.testing.assert_allclose(table["chisq"], chisq, rtol=1e-6)
    assert table["df"].tolist() == [1] * len(names) + [len(names)]


@pytest.mark.parametrize("ties, transform, strata, case", [
    ("efron", "km", None, "efron km"), ("efron", "identity", None, "efron identity"),
    ("breslow", "km", None, "breslow km"), ("efron", "km", "wexp", "efron strata km")])
def test_rossi_fin_cut_at_20_against_R(ties, transform, strata, case):
    """fin's coefficient before and after week 20 (the "strata" route: no entry times), with
    and without strata of its own."""
    res = rossi_fit(ties, strata)
    if case in R_COEF:
        np.testing.assert_allclose(res.coef, R_COEF[case], rtol=1e-6)
    zph = engine.ph_test(res, transform=transform)
    check_table(zph.table, R_ZPH[case], [*FIN, "age", "prio"])
    assert zph.statistic == pytest.approx(R_ZPH[case][-1], rel=1e-6)


def test_two_cut_points_and_the_callers_cohort():
    """age cut at weeks 10 and 30: three intervals, three terms; the cohort passed is the
    caller's (before the cut points), as engine.fit took it."""
    cohort = engine.Cohort.from_frame(ROSSI, "week", "arrest", covariates=["fin", "age", "prio"])
    res = engine.fit(cohort, ties="efron", cut_points={"age": [10, 30]})
    np.testing.assert_allclose(res.coef, [-0.3493434564470759, 0.0257788089498097,
                                          -0.0344765620176787, -0.1601673962852204,
                                          0.0985086304947808], rtol=1e-6)
    table = engine.ph_test(res, cohort).table
    check_table(table, [0.00632554076436148, 0.13141293911650265, 0.66905222667091113,
                        2.99185588543056680, 0.90492695599683126, 4.65321473092476356],
                ["fin", "age[0,10)", "age[10,30)", "age[30,inf)", "prio"])


def test_entry_times_counting_route_against_R():
    """jasa1's (start, stop] rows (delayed entry after a transplant), age cut at day 100."""
    cohort = engine.Cohort.from_frame(JASA1, "stop", "event", start="start", id="id",
                                      covariates=["age", "transplant", "surgery"])
    res = engine.fit(cohort, ties="efron", cut_points={"age": [100]})
    np.testing.assert_allclose(res.coef, [0.0330843026394845, 0.0242189214913739,
                                          0.0199379002414761, -0.7690781367283055], rtol=1e-6)
    check_table(engine.ph_test(res).table,
                [2.1982004164654603, 2.5418314511465381, 0.0781144253677784,
                 0.0987250782978865, 5.2640553992246728],
                ["age[0,100)", "age[100,inf)", "transplant", "surgery"])


def test_scaled_schoenfeld_residuals_against_R():
    """cox.zph(fit)$y: the first four events' rows and every column's sum; a coefficient that
    is zero in an interval still has its residual there (R fits no interval strata)."""
    resid = engine.scaled_schoenfeld(rossi_fit())
    columns = [*FIN, "age", "prio"]
    np.testing.assert_allclose(resid["time"].head(4), [1, 2, 3, 4])
    np.testing.assert_allclose(resid[columns].head(4), [
        [-5.38011375502225, -0.243643830534884, -0.199186213871062, -0.2772788641524949],
        [-5.96413357148005, -1.003681983705897, 0.999433343761386, -0.0122181902206770],
        [-5.62663102903494, -0.654842674001025, 0.309230486574963, 0.0174576789308068],
        [-5.35150742936781, -0.231141072994929, -0.293635267252109, -0.2008960128957732]],
        rtol=1e-6)
    np.testing.assert_allclose(resid[columns].sum(), [-8.80904035891271, -56.54688541830873,
                                                      -7.63957806438360, 11.16857158214909],
                               rtol=1e-6)
    curves = engine.ph_smooth(rossi_fit())
    assert sorted(curves["covariate"].unique()) == sorted(columns)
    assert np.isfinite(curves[["beta", "lower", "upper"]]).all().all()


def test_concordance_against_R():
    """concordance(fit): C, its standard error and the pair counts of the episodes."""
    c = engine.concordance(rossi_fit())
    np.testing.assert_allclose(c[["concordance", "se", "concordant", "discordant", "tied"]],
                               [0.633119628011836, 0.0270731235317142, 26862, 15525, 195],
                               rtol=1e-6)


def test_the_episodes_are_not_the_cohort_to_pass():
    res = rossi_fit()
    with pytest.raises(ValueError, match="not the episodes|not its episodes"):
        engine.ph_test(res, res.problem.cohort)
    with pytest.raises(ValueError, match="not the episodes|not its episodes"):
        engine.residuals(res, "martingale", res.problem.cohort)
