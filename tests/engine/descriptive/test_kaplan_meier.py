"""engine.kaplan_meier against R survfit's published output, lifelines and brute-force definitions.

R values are copied from the survival package's own saved test output (R survival, Therneau:
tests/doaml.Rout.save and tests/Examples/survival-Ex.Rout.save), printed to 3-4 digits, so they
are compared at half a unit of the last printed digit; the 1e-6 checks use lifelines'
KaplanMeierFitter and O(N * T) definitions written here.
"""
import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter
from lifelines.datasets import load_lung
from lifelines.exceptions import StatisticalWarning
from lifelines.utils import median_survival_times

import engine
from r_survival_data import AML


# summary(survfit(Surv(time, status) ~ x, aml)) in R survival's tests/doaml.Rout.save
R_AML = {
    "x=Maintained": [  # time, n.risk, n.event, survival, std.err, lower, upper
        (9, 11, 1, 0.909, 0.0867, 0.7541, 1.000), (13, 10, 1, 0.818, 0.1163, 0.6192, 1.000),
        (18, 8, 1, 0.716, 0.1397, 0.4884, 1.000), (23, 7, 1, 0.614, 0.1526, 0.3769, 0.999),
        (31, 5, 1, 0.491, 0.1642, 0.2549, 0.946), (34, 4, 1, 0.368, 0.1627, 0.1549, 0.875),
        (48, 2, 1, 0.184, 0.1535, 0.0359, 0.944)],
    "x=Nonmaintained": [
        (5, 12, 2, 0.8333, 0.1076, 0.6470, 1.000), (8, 10, 2, 0.6667, 0.1361, 0.4468, 0.995),
        (12, 8, 1, 0.5833, 0.1423, 0.3616, 0.941), (23, 6, 1, 0.4861, 0.1481, 0.2675, 0.883),
        (27, 5, 1, 0.3889, 0.1470, 0.1854, 0.816), (30, 4, 1, 0.2917, 0.1387, 0.1148, 0.741),
        (33, 3, 1, 0.1944, 0.1219, 0.0569, 0.664), (43, 2, 1, 0.0972, 0.0919, 0.0153, 0.620)],
}


def _half_unit(printed):
    """Half a unit of the last digit R printed (e.g. 0.0867 -> 5e-5)."""
    text = f"{printed}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0 ** -decimals + 1e-12


@pytest.fixture(scope="module")
def aml_km():
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    return engine.kaplan_meier(cohort, by="x", conf_type="log")


@pytest.fixture(scope="module")
def lung():
    return load_lung().dropna(subset=["ph.ecog"]).reset_index(drop=True)


def test_aml_table_against_R(aml_km):
    table = aml_km.table
    for group, rows in R_AML.items():
        mine = table[(table["group"] == group) & (table["events"] > 0)].reset_index(drop=True)
        assert len(mine) == len(rows) + (group == "x=Nonmaintained")   # + the row S = 0
        for k, (t, n, d, s, se, lo, up) in enumerate(rows):
            got = mine.loc[k]
            assert (got["time"], got["at_risk"], got["events"]) == (t, n, d)
            for name, value in (("survival", s), ("std_err", se), ("lower", lo),
                                ("upper", up)):
                assert abs(got[name] - value) <= _half_unit(value), (group, t, name)
    last = table[table["group"] == "x=Nonmaintained"].iloc[-1]
    assert last["survival"] == 0 and np.isnan(last["lower"]) and np.isnan(last["upper"])


def test_aml_median_against_R(aml_km):
    # R: Maintained 31 (18, NA); Nonmaintained 23 (8, NA)
    med = aml_km.median
    assert med.loc["x=Maintained", ["median", "lower"]].tolist() == [31, 18]
    assert med.loc["x=Nonmaintained", ["median", "lower"]].tolist() == [23, 8]
    assert med["upper"].isna().all()


def test_lung_median_and_rmst_by_ph_ecog_against_R(lung):
    # print(survfit(Surv(time, status) ~ ph.ecog, lung), rmean=730), survival-Ex.Rout.save
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["ph.ecog"])
    km = engine.kaplan_meier(cohort, by="ph.ecog")
    expected = {"ph.ecog=0": (429, 32.2, 394, 348, 574), "ph.ecog=1": (366, 22.4, 306, 268, 429),
                "ph.ecog=2": (256, 30.0, 199, 156, 288), "ph.ecog=3": (118, 0.0, 118, None, None)}
    rmst, med = km.rmst(730), km.median
    for group, (mean, se, median, lo, up) in expected.items():
        assert abs(rmst.loc[group, "rmst"] - mean) <= 0.5
        assert abs(rmst.loc[group, "se"] - se) <= 0.05
        assert med.loc[group, "median"] == median
        if lo is None:
            assert np.isnan(med.loc[group, "lower"]) and np.isnan(med.loc[group, "upper"])
        else:
            assert med.loc[group, ["lower", "upper"]].tolist() == [lo, up]


def _brute_rmst(time, event, tau):
    """Area under the KM step function on [0, tau] and Miller's variance, by plain loops."""
    grid = sorted(set(time[event == 1]))
    s, points, h = 1.0, [], []
    for t in grid:
        n = np.sum(time >= t)
        d = np.sum((time == t) & (event == 1))
        s *= 1 - d / n
        points.append((t, s))
        h.append(d / (n * (n - d)) if n > d else 0.0)
    area, prev_t, prev_s = 0.0, 0.0, 1.0
    for t, value in points:
        if t > tau:
            break
        area += (t - prev_t) * prev_s
        prev_t, prev_s = t, value
    area += (tau - prev_t) * prev_s
    var = 0.0
    for (t, _), hk in zip(points, h):
        if t > tau:
            break
        after, lt, ls = 0.0, t, dict(points)[t]
        for u, value in points:
            if t < u <= tau:
                after += (u - lt) * ls
                lt, ls = u, value
        after += (tau - lt) * ls
        var += after ** 2 * hk
    return area, np.sqrt(var)


def test_lung_against_lifelines_and_brute_force(lung):
    cohort = engine.Cohort.from_frame(lung, "time", "status", covariates=["sex"])
    km = engine.kaplan_meier(cohort, by="sex")
    for sex in (1, 2):
        rows = lung[lung["sex"] == sex]
        kmf = KaplanMeierFitter().fit(rows["time"], rows["status"])
        mine = km.table[km.table["group"] == f"sex={sex}"]
        sf = kmf.survival_function_.iloc[:, 0]
        np.testing.assert_allclose(mine["survival"], sf.loc[mine["time"]], rtol=1e-12)
        band = kmf.confidence_interval_.loc[mine["time"]].to_numpy()
        np.testing.assert_allclose(mine["lower"], band[:, 0], rtol=1e-9)
        np.testing.assert_allclose(mine["upper"], band[:, 1], rtol=1e-9)
        table = kmf.event_table.loc[mine["time"]]
        np.testing.assert_array_equal(mine["at_risk"], table["at_risk"])
        np.testing.assert_array_equal(mine["events"], table["observed"])
        np.testing.assert_array_equal(mine["censored"], table["censored"])
        # the median's log-log limits as lifelines takes them (first crossing of 0.5)
        q = km.quantile([0.5], conf_type="log-log").set_index("group").loc[f"sex={sex}"]
        lifelines_ci = median_survival_times(kmf.confidence_interval_).iloc[0].to_numpy()
        assert q["median"] == kmf.median_survival_time_
        np.testing.assert_allclose([q["lower"], q["upper"]], lifelines_ci)
        area, se = _brute_rmst(rows["time"].to_numpy(), rows["status"].to_numpy(), 500.0)
        got = km.rmst(500.0).loc[f"sex={sex}"]
        assert got["rmst"] == pytest.approx(area, rel=1e-12)
        assert got["se"] == pytest.approx(se, rel=1e-10)


def test_at_times_as_R_summary(aml_km):
    out = aml_km.at([0, 10, 20, 30, 100, 170])
    m = out[out["group"] == "x=Maintained"].set_index("time")
    # beyond the last follow-up (161) a time is dropped, as R without extend=TRUE
    assert m.index.tolist() == [0, 10, 20, 30, 100]
    assert m["at_risk"].tolist() == [11, 10, 7, 5, 1]
    assert m["events"].tolist() == [0, 1, 2, 1, 3]
    assert m["censored"].tolist() == [0, 0, 1, 1, 1]
    np.testing.assert_allclose(m["survival"], [1.0, 10 / 11, 10 / 11 * 9 / 10 * 7 / 8,
                                               10 / 11 * 9 / 10 * 7 / 8 * 6 / 7,
                                               10 / 11 * 9 / 10 * 7 / 8 * 6 / 7 * 4 / 5 * 3 / 4
                                               * 1 / 2], rtol=1e-12)
    table = aml_km.table.set_index(["group", "time"])
    assert m.loc[30, "lower"] == table.loc[("x=Maintained", 23.0), "lower"]
    extended = aml_km.at([170], extend=True)
    assert extended["at_risk"].tolist() == [0, 0]
    assert extended["survival"].iloc[1] == 0.0
    assert np.isnan(extended["std_err"].iloc[1])      # S = 0: R prints NaN (no warning here)
    zero = engine.kaplan_meier(engine.Cohort.from_frame(
        pd.DataFrame({"t": [1.0, 2.0, 2.0], "e": [0, 1, 1], "x": [0.0, 1.0, 2.0]}), "t", "e",
        covariates=["x"])).at([2.0, 3.0], extend=True)
    assert zero["survival"].tolist() == [0.0, 0.0] and zero["std_err"].isna().all()


def test_weights_two_halve_the_variance_as_R(aml_km):
    # doaml.Rout.save: weights rep(2, 23) keep the survival and halve std.err^2
    cohort = engine.Cohort.from_frame(AML.assign(w=2.0), "time", "status", covariates=["x"],
                                      weights="w")
    doubled = engine.kaplan_meier(cohort, by="x", conf_type="log").table
    plain = aml_km.table
    np.testing.assert_allclose(doubled["survival"], plain["survival"], rtol=1e-14)
    np.testing.assert_allclose(doubled["std_err"] ** 2, plain["std_err"] ** 2 / 2, rtol=1e-12)
    np.testing.assert_allclose(doubled["at_risk"], 2 * plain["at_risk"])


def test_fractional_weights_against_lifelines(lung):
    w = 0.5 + (np.arange(len(lung)) % 7) / 4.0
    cohort = engine.Cohort.from_frame(lung.assign(w=w), "time", "status", covariates=["age"],
                                      weights="w")
    mine = engine.kaplan_meier(cohort, variance="greenwood").table
    with pytest.warns(StatisticalWarning, match="not integers"):
        kmf = KaplanMeierFitter().fit(lung["time"], lung["status"], weights=w)
    np.testing.assert_allclose(mine["survival"],
                               kmf.survival_function_.iloc[:, 0].loc[mine["time"]], rtol=1e-12)
    np.testing.assert_allclose(mine["at_risk"], kmf.event_table.loc[mine["time"], "at_risk"],
                               rtol=1e-12)
    # lifelines truncates the weighted at-risk counts to integers in its variance, so the
    # limits are checked against the weighted Greenwood sum written out here
    time, status = lung["time"].to_numpy(), lung["status"].to_numpy()
    greenwood = 0.0
    for _, row in mine.iterrows():
        n = w[time >= row["time"]].sum()
        d = w[(time == row["time"]) & (status == 1)].sum()
        greenwood += d / (n * (n - d)) if d else 0.0
        s = row["survival"]
        shift = 1.959963984540054 * np.sqrt(greenwood) / np.log(s)
        assert row["lower"] == pytest.approx(np.exp(-np.exp(np.log(-np.log(s)) - shift)),
                                             rel=1e-10)
        assert row["upper"] == pytest.approx(np.exp(-np.exp(np.log(-np.log(s)) + shift)),
                                             rel=1e-10)


def test_split_episodes_are_not_censorings(rossi):
    """Rossi split at weeks 10 and 30 into (start, stop] episodes gives the unsplit table."""
    rows = []
    for i, r in rossi.iterrows():
        cuts = [c for c in (10, 30) if c < r["week"]]
        bounds = [0, *cuts, r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "fin": r["fin"],
                         "arrest": int(r["arrest"] and b == r["week"])})
    split = pd.DataFrame(rows)
    plain = engine.kaplan_meier(engine.Cohort.from_frame(rossi, "week", "arrest",
                                                         covariates=["fin"]), by="fin").table
    episodes = engine.kaplan_meier(engine.Cohort.from_frame(
        split, "stop", "arrest", covariates=["fin"], start="start", id="id"), by="fin").table
    pd.testing.assert_frame_equal(plain, episodes)
    assert episodes["censored"].sum() == (rossi["arrest"] == 0).sum()


def test_delayed_entry_against_brute_force():
    """Stanford heart (start, stop] rows: at-risk and survival by the definition
    n(t) = #{start < t <= stop}, each subject's censoring once, at its last episode."""
    heart = engine.datasets.load_stanford_heart()
    cohort = engine.Cohort.from_frame(heart, "stop", "event", covariates=["age"],
                                      start="start", id="id")
    table = engine.kaplan_meier(cohort).table
    start, stop, event = (heart[c].to_numpy(float) for c in ("start", "stop", "event"))
    s = 1.0
    for _, row in table.iterrows():
        t = row["time"]
        n = np.sum((start < t) & (t <= stop))
        d = np.sum((stop == t) & (event == 1))
        s *= 1 - d / n
        assert row["at_risk"] == n and row["events"] == d
        assert row["survival"] == pytest.approx(s, rel=1e-12)
    last = heart.sort_values("stop").groupby("id").tail(1)
    assert table["censored"].sum() == (last["event"] == 0).sum()
    assert table["events"].sum() == heart["event"].sum()


def test_by_text_covariate_and_strata():
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=[], strata="x")
    by_strata = engine.kaplan_meier(cohort, by="x", conf_type="log").table
    coded = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    by_covariate = engine.kaplan_meier(coded, by="x", conf_type="log").table
    pd.testing.assert_frame_equal(by_strata, by_covariate)


@pytest.mark.parametrize("call, message", [
    (lambda km: km.quantile([1.5]), "probs"),
    (lambda km: km.at([-1]), "times"),
    (lambda km: km.rmst(0), "tau"),
    (lambda km: km.quantile([0.5], conf_type="logit"), "conf_type"),
])
def test_bad_arguments(aml_km, call, message):
    with pytest.raises(ValueError, match=message):
        call(aml_km)


def test_unknown_group_column():
    cohort = engine.Cohort.from_frame(AML, "time", "status", covariates=["x"])
    with pytest.raises(engine.CohortError, match="'sex'"):
        engine.kaplan_meier(cohort, by="sex")
    with pytest.raises(TypeError, match="Cohort"):
        engine.kaplan_meier(AML)
