"""engine.incidence_rates: exact rates and rate ratios against R's poisson.test (printed by
tests/data/r_incidence_rates.R, R 4.2.2, to 15 digits), rate differences against statsmodels'
Wald interval, and the robust (sampling-weight, clustered) variance against statsmodels'
Poisson GLM sandwich and the infinitesimal jackknife taken by finite differences."""
from pathlib import Path
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.rates import confint_poisson_2indep
from statsmodels.tools.sm_exceptions import SpecificationWarning

import engine
from r_printed import data_frame, sections
from rossi_episodes import survsplit

R = sections("r_incidence_rates.Rout")
ROOT = Path(__file__).parents[3]
Z95 = 1.959963984540054


@pytest.fixture(scope="module")
def rossi(rossi_r_weights):
    r = rossi_r_weights.copy()
    r["g3"] = pd.cut(r["prio"], [-1, 1, 4, 100], labels=["p0-1", "p2-4", "p5+"]).astype(str)
    r["gz"] = np.where((r["arrest"] == 0) & (r["id"] % 5 == 0), "none",
                       np.where(r["fin"] == 1, "a", "b"))
    return r


def _as_r(result, label):
    rates, ratios = data_frame(R[f"{label} rates"]), data_frame(R[f"{label} ratios"])
    got = result.rates
    assert list(got.index) == [str(g) for g in rates["group"]]
    for column in ("events", "person_time", "rate", "lower", "upper"):
        np.testing.assert_allclose(got[column], rates[column], rtol=1e-12, atol=1e-300)
    got = result.comparisons.set_index("group")
    assert list(got.index) == [str(g) for g in ratios["group"]]
    for column in ("rate_ratio", "rr_lower", "rr_upper", "p"):
        np.testing.assert_allclose(got[column], ratios[column], rtol=1e-10)


def test_exact_rates_and_ratios_as_R(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    result = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy())
    assert result.variance == "exact" and result.per == 1000.0
    assert result.rates["events"].dtype == np.int64
    _as_r(result, "rossi fin")
    _as_r(engine.incidence_rates(cohort, by=rossi["g3"].to_numpy(), per=100, level=0.9,
                                 reference="p2-4"), "rossi prio level 0.9")
    zero = engine.incidence_rates(cohort, by=rossi["gz"].to_numpy())
    _as_r(zero, "rossi zero events")
    assert zero.rates.loc["none", ["rate", "lower"]].eq(0).all()


def test_episodes_add_up_per_subject(rossi):
    split = survsplit(rossi, [10, 20, 30])
    cohort = engine.Cohort.from_frame(split, "week", "arrest", covariates=[], start="start",
                                      id="id")
    _as_r(engine.incidence_rates(cohort, by=split["fin"].to_numpy()), "rossi split")


def test_cause_specific_rates_as_R():
    bmt = pd.read_csv(ROOT / "sample_data" / "bmtcrr.csv")
    cohort = engine.Cohort.from_frame(bmt, "ftime", "Status", covariates=[],
                                      competing_risks=True)
    for cause in (1, 2):
        _as_r(engine.incidence_rates(cohort, by=bmt["D"].to_numpy(), per=12, cause=cause),
              f"bmtcrr cause {cause} by D")


def test_rate_difference_as_statsmodels(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    got = engine.incidence_rates(cohort, by=rossi["g3"].to_numpy(), per=1).comparisons
    d = rossi.groupby("g3")["arrest"].sum()
    t = rossi.groupby("g3")["week"].sum()
    for _, row in got.iterrows():
        g, r = row["group"], row["reference"]
        low, high = confint_poisson_2indep(d[g], t[g], d[r], t[r], method="wald",
                                           compare="diff")
        assert row["rate_difference"] == pytest.approx(d[g] / t[g] - d[r] / t[r], rel=1e-12)
        assert (row["rd_lower"], row["rd_upper"]) == pytest.approx((low, high), rel=1e-9)


def _poisson_glm(frame, X, cluster=None):
    """statsmodels' Poisson GLM with the weights as sampling weights (var_weights) and the
    sandwich variance: by row (HC0) or by cluster without the small-sample factor."""
    model = sm.GLM(frame["arrest"].to_numpy(), X, family=sm.families.Poisson(),
                   exposure=frame["week"].to_numpy(), var_weights=frame["w"].to_numpy())
    if cluster is None:
        return model.fit(cov_type="HC0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecificationWarning)   # checked here: it agrees
        return model.fit(cov_type="cluster", cov_kwds={"groups": cluster,
                                                       "use_correction": False})


@pytest.mark.parametrize("clustered", [False, True])
def test_weighted_rates_as_statsmodels_sandwich(rossi, clustered):
    cluster = np.minimum(rossi["age"], 30).to_numpy() if clustered else None
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    result = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy(), cluster=cluster)
    assert result.variance == ("robust by cluster" if clustered else "robust by row")
    groups = pd.get_dummies(rossi["fin"]).astype(float).to_numpy()
    glm = _poisson_glm(rossi, groups, cluster)
    rates = result.rates
    np.testing.assert_allclose(rates["rate"], np.exp(glm.params) * 1000, rtol=1e-9)
    se = np.sqrt(np.diag(glm.cov_params()))
    np.testing.assert_allclose(rates["lower"], rates["rate"] * np.exp(-Z95 * se), rtol=1e-9)
    np.testing.assert_allclose(rates["upper"], rates["rate"] * np.exp(Z95 * se), rtol=1e-9)
    # the ratio as the treatment coefficient of the model with an intercept (clusters that
    # span both groups correlate the two rates: the covariance counts)
    contrast = _poisson_glm(rossi, sm.add_constant(rossi["fin"].to_numpy(float)), cluster)
    row = result.comparisons.iloc[0]
    assert row["rate_ratio"] == pytest.approx(np.exp(contrast.params[1]), rel=1e-9)
    lower, upper = np.exp(contrast.conf_int()[1])
    assert (row["rr_lower"], row["rr_upper"]) == pytest.approx((lower, upper), rel=1e-9)
    assert row["p"] == pytest.approx(contrast.pvalues[1], rel=1e-8)
    # the difference by the delta method on the same covariance
    lam, cov = np.exp(glm.params), glm.cov_params()
    var = lam[1] ** 2 * cov[1, 1] + lam[0] ** 2 * cov[0, 0] - 2 * lam[0] * lam[1] * cov[0, 1]
    half = Z95 * np.sqrt(var) * 1000
    assert row["rd_upper"] - row["rate_difference"] == pytest.approx(half, rel=1e-9)


def test_recurrent_events_robust_by_subject_as_the_jackknife():
    """bladder's recurrences: several events per id, so robust by id (R's rule); its standard
    error is the infinitesimal jackknife's, each subject's weights scaled by 1 + eps."""
    bladder = pd.read_csv(ROOT / "tests" / "data" / "bladder.csv")
    bladder = bladder[bladder["stop"] > 0]
    previous = bladder.groupby("id")["stop"].shift(fill_value=0)
    bladder = bladder.assign(start=previous)[lambda f: f["stop"] > f["start"]]
    cohort = engine.Cohort.from_frame(bladder, "stop", "event", covariates=[], start="start",
                                      id="id")
    result = engine.incidence_rates(cohort, by=bladder["rx"].to_numpy(), per=1)
    assert result.variance == "robust by id"
    t = (bladder["stop"] - bladder["start"]).to_numpy()
    d, rx, ids = bladder["event"].to_numpy(), bladder["rx"].to_numpy(), bladder["id"].to_numpy()

    def log_rates(w):
        return np.log([np.sum(w * d * (rx == g)) / np.sum(w * t * (rx == g)) for g in (1, 2)])

    eps = 1e-6
    influence = np.array([(log_rates(1 + eps * (ids == i)) - log_rates(1 - eps * (ids == i)))
                          / (2 * eps) for i in np.unique(ids)])
    se = np.sqrt(np.sum(influence ** 2, axis=0))
    rates = result.rates
    np.testing.assert_allclose(np.log(rates["upper"] / rates["rate"]) / Z95, se, rtol=1e-6)
    row = result.comparisons.iloc[0]
    se_ratio = np.sqrt(np.sum((influence[:, 1] - influence[:, 0]) ** 2))
    assert np.log(row["rr_upper"] / row["rate_ratio"]) / Z95 == pytest.approx(se_ratio, rel=1e-6)


def test_whole_number_weights_count_as_copies(rossi):
    copies = rossi.loc[rossi.index.repeat(1 + rossi["id"] % 3)]
    counted = rossi.assign(n=1 + rossi["id"] % 3)
    a = engine.incidence_rates(engine.Cohort.from_frame(copies, "week", "arrest", covariates=[]),
                               by=copies["fin"].to_numpy())
    b = engine.incidence_rates(engine.Cohort.from_frame(counted, "week", "arrest",
                                                        covariates=[], weights="n"),
                               by=counted["fin"].to_numpy())
    assert b.variance == "exact"
    pd.testing.assert_frame_equal(a.rates, b.rates, check_dtype=False, rtol=1e-12)
    pd.testing.assert_frame_equal(a.comparisons, b.comparisons, rtol=1e-12)


def test_one_group_and_bad_arguments(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    one = engine.incidence_rates(cohort, variance="robust")
    assert list(one.rates.index) == ["all"] and one.comparisons.empty
    with pytest.raises(ValueError, match="per must be a positive number"):
        engine.incidence_rates(cohort, per=0)
    with pytest.raises(ValueError, match="per must be a positive number"):
        engine.incidence_rates(cohort, per="1000")
    with pytest.raises(ValueError, match="cause 3 is not an event code"):
        engine.incidence_rates(cohort, cause=3)
    with pytest.raises(ValueError, match="reference 'x' is not one of the groups"):
        engine.incidence_rates(cohort, by=rossi["fin"].to_numpy(), reference="x")
    with pytest.raises(ValueError, match="not whole numbers; use variance='robust'"):
        engine.incidence_rates(cohort, variance="exact")
    with pytest.raises(ValueError, match="level must be a number"):
        engine.incidence_rates(cohort, level=95)
    with pytest.raises(TypeError, match="needs an engine.Cohort"):
        engine.incidence_rates(rossi)


def test_follow_up_bands_as_R(rossi):
    """breaks=[20, 40]: each band's rates and rate ratio, as poisson.test on survSplit's rows;
    the bands' events and person-time add up to the whole follow-up's."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    result = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy(), breaks=[20, 40])
    assert list(result.rates.index.get_level_values("interval").unique()) == [
        "<= 20", "(20, 40]", "> 40"]
    for band, interval in enumerate(["<= 20", "(20, 40]", "> 40"], start=1):
        rates = data_frame(R[f"rossi band {band} rates"])
        got = result.rates.xs(interval, level="interval")
        for column in ("events", "person_time", "rate", "lower", "upper"):
            np.testing.assert_allclose(got[column], rates[column], rtol=1e-12)
        ratio = data_frame(R[f"rossi band {band} ratios"]).iloc[0]
        row = result.comparisons.set_index("interval").loc[interval]
        assert row["group"] == "1" and row["reference"] == "0"
        for column in ("rate_ratio", "rr_lower", "rr_upper", "p"):
            assert row[column] == pytest.approx(ratio[column], rel=1e-10)
    whole = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy()).rates
    summed = result.rates.groupby(level="group")[["events", "person_time"]].sum()
    pd.testing.assert_frame_equal(summed, whole[["events", "person_time"]])


def test_weighted_bands_as_statsmodels_clustered_by_person(rossi):
    """With weights, a person's pieces in several bands are one cluster: the sandwich of
    statsmodels' Poisson GLM on the split rows clustered by id, one dummy a (group, band)."""
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[], weights="w")
    result = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy(), breaks=[20, 40])
    assert result.variance == "robust by row"
    split = survsplit(rossi, [20, 40])
    cells = pd.get_dummies(split["fin"].astype(str) + ":" + split["band"].astype(str))
    model = sm.GLM(split["arrest"].to_numpy(), cells.astype(float).to_numpy(),
                   family=sm.families.Poisson(),
                   exposure=(split["week"] - split["start"]).to_numpy(),
                   var_weights=split["w"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecificationWarning)
        glm = model.fit(cov_type="cluster", cov_kwds={"groups": split["id"].to_numpy(),
                                                      "use_correction": False})
    # cells in the engine's order: group 0's bands, then group 1's (get_dummies sorts alike)
    assert list(cells.columns) == ["0:1", "0:2", "0:3", "1:1", "1:2", "1:3"]
    np.testing.assert_allclose(result.rates["rate"], np.exp(glm.params) * 1000, rtol=1e-9)
    se = np.sqrt(np.diag(glm.cov_params()))
    np.testing.assert_allclose(result.rates["upper"], result.rates["rate"] * np.exp(Z95 * se),
                               rtol=1e-9)
    cov = glm.cov_params()
    for band in range(3):
        g, r = 3 + band, band
        se_ratio = np.sqrt(cov[g, g] + cov[r, r] - 2 * cov[g, r])
        row = result.comparisons.iloc[band]
        assert np.log(row["rr_upper"] / row["rate_ratio"]) == pytest.approx(Z95 * se_ratio,
                                                                          rel=1e-9)


def test_bands_nobody_reached_are_left_out(rossi):
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=[])
    result = engine.incidence_rates(cohort, by=rossi["fin"].to_numpy(), breaks=[20, 60])
    assert list(result.rates.index.get_level_values("interval").unique()) == ["<= 20",
                                                                                 "(20, 60]"]
    assert len(result.comparisons) == 2
    for bad in ([40, 20], [], ["a"], [np.inf]):
        with pytest.raises(ValueError, match="breaks must be"):
            engine.incidence_rates(cohort, breaks=bad)
