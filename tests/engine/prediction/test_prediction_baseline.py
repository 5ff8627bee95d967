"""Baseline hazards and predictions of Cox fits (engine.prediction) against R's printed
survfit output (survival's tests/ovarian.Rout.save), lifelines, engine.residuals and the
Breslow / Efron / Tsiatis formulas written out row by row."""
import warnings

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter

import engine
from engine.regression.baseline import baseline
from r_survival_data import OVARIAN
from rossi_episodes import rossi_episodes

# R survival tests/ovarian.Rout.save: summary(survfit(coxph(Surv(futime, fustat) ~ age +
# ecog.ps + strata(rx)))): time, survival, std.err, lower 95% CI (log); the curve at the means
R_OVARIAN = {
    1: [(59, 0.978, 0.0266, 0.9275), (115, 0.951, 0.0478, 0.8620), (156, 0.910, 0.0760, 0.7722),
        (268, 0.862, 0.1055, 0.6776), (329, 0.737, 0.1525, 0.4909), (431, 0.627, 0.1704, 0.3680),
        (638, 0.333, 0.2296, 0.0865)],
    2: [(353, 0.943, 0.0560, 0.839), (365, 0.880, 0.0812, 0.735), (464, 0.789, 0.1143, 0.594),
        (475, 0.697, 0.1349, 0.477), (563, 0.597, 0.1494, 0.366)],
}
# summary(survfit(fit, list(age=c(30, 70), ecog.ps=c(2, 3)))): survival1, survival2
R_OVARIAN_NEW = {
    1: [(0.999, 0.87905), (0.999, 0.74575), (0.998, 0.57398), (0.996, 0.41764),
        (0.992, 0.16673), (0.988, 0.06489), (0.973, 0.00161)],
    2: [(0.999, 0.7092), (0.997, 0.4738), (0.994, 0.2494), (0.991, 0.1207), (0.987, 0.0489)],
}


def _half_unit(printed) -> float:
    """Half a unit of the last printed digit (R prints 3-4 significant digits)."""
    text = f"{printed}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0 ** -decimals + 1e-12


@pytest.fixture(scope="module")
def ovarian_fit():
    cohort = engine.Cohort.from_frame(OVARIAN, "futime", "fustat", covariates=["age", "ecog_ps"],
                                      strata="rx")
    return engine.fit(cohort, ties="efron"), cohort


def test_ovarian_curve_at_the_means_against_r(ovarian_fit):
    res, _ = ovarian_fit
    means = OVARIAN[["age", "ecog_ps"]].mean()
    newdata = pd.DataFrame({"age": means["age"], "ecog_ps": means["ecog_ps"], "rx": [1, 2]})
    curves = res.predict_survival(newdata)
    base = res.baseline_survival()
    for rx, rows in R_OVARIAN.items():
        mine = curves[curves["stratum"] == str(rx)]
        assert list(mine["time"]) == [r[0] for r in rows]
        for (_, surv, se, lower), (_, got) in zip(rows, mine.iterrows()):
            assert abs(got["survival"] - surv) <= _half_unit(surv)
            assert abs(got["std_err"] - se) <= _half_unit(se)
            assert abs(got["lower"] - lower) <= _half_unit(lower)
        # basehaz(centered=TRUE) is the same curve: at the means
        np.testing.assert_allclose(base[base["stratum"] == str(rx)]["survival"],
                                   mine["survival"], rtol=1e-12)


def test_ovarian_new_profiles_against_r(ovarian_fit):
    res, _ = ovarian_fit
    newdata = pd.DataFrame({"age": [30, 70] * 2, "ecog_ps": [2, 3] * 2, "rx": [1, 1, 2, 2]})
    curves = res.predict_survival(newdata)
    for rx, rows in R_OVARIAN_NEW.items():
        for k, row in enumerate((2 * (rx - 1), 2 * (rx - 1) + 1)):
            got = curves[curves["row"] == row]["survival"].to_numpy()
            want = np.array([r[k] for r in rows])
            tol = np.array([_half_unit(r[k]) for r in rows])
            assert np.all(np.abs(got - want) <= tol), (rx, k, got, want)


def test_breslow_hazard_and_curves_against_lifelines(rossi):
    names = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    cph = CoxPHFitter().fit(rossi[["week", "arrest", *names]], "week", "arrest")
    cohort = engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names)
    res = engine.fit(cohort, ties="efron")
    np.testing.assert_allclose(res.coef, cph.params_[names], rtol=1e-5)
    # lifelines' baseline_hazard_ is Breslow's estimator at its (Efron) coefficients, centred
    # at the unweighted means of every column; R's fit$means (the table's centre) puts the 0/1
    # columns at 0: the same hazards times exp((means - c)' beta)
    beta = cph.params_[names].to_numpy()
    b = baseline(cohort, res.problem.model.data, beta, "breslow")
    table = b.table()
    shift = np.exp((rossi[names].mean().to_numpy() - b.center) @ beta)
    want = cph.baseline_hazard_["baseline hazard"]
    want = want[want > 0]
    np.testing.assert_allclose(table["time"], want.index, rtol=0)
    np.testing.assert_allclose(table["hazard"] * shift, want.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(table["cumhaz"] * shift,
                               cph.baseline_cumulative_hazard_.loc[want.index].to_numpy().ravel(),
                               rtol=1e-10)
    # lifelines' predicted curves (which do not depend on the centring) from that hazard;
    # lifelines interpolates between event times, so ask at event times
    newdata = rossi.iloc[[0, 5, 17, 200]]
    times = [5.0, 20.0, 34.0, 52.0]
    lp = newdata[names].to_numpy(float) @ cph.params_[names].to_numpy() - b.offset
    want = np.exp(-np.exp(lp)[:, None] * b.cumulative(b.hazard, 0, times)[None, :])
    np.testing.assert_allclose(cph.predict_survival_function(newdata[names], times=times).T,
                               want, rtol=1e-10)
    # a Breslow fit's predict_survival is that formula at its own coefficients
    res_b = engine.fit(cohort, ties="breslow")
    b_b = res_b.baseline
    lp = newdata[names].to_numpy(float) @ res_b.coef.to_numpy() - b_b.offset
    mine = res_b.predict_survival(newdata, times=times)["survival"].to_numpy().reshape(4, 4)
    np.testing.assert_allclose(mine, np.exp(-np.exp(lp)[:, None]
                                            * b_b.cumulative(b_b.hazard, 0, times)[None, :]),
                               rtol=1e-12)


def _by_definition(data, beta, center, ties, stratum, z, t, V):
    """Cumulative hazard at x = z up to t, and its Tsiatis variance, by the formulas of
    R's agsurv written row by row (one stratum)."""
    names = ["fin", "age", "prio"]
    d_ = data[data["race"] == stratum]
    X = d_[names].to_numpy(float)
    r = d_["w"].to_numpy() * np.exp((X - center) @ beta)
    H = Vh = 0.0
    xbar = np.zeros(3)
    for tk in np.unique(d_.loc[d_["arrest"] == 1, "stop"]):
        if tk > t:
            break
        risk = ((d_["start"] < tk) & (d_["stop"] >= tk)).to_numpy()
        dead = (risk & (d_["stop"] == tk) & (d_["arrest"] == 1)).to_numpy()
        S0, S1 = r[risk].sum(), (r[risk, None] * X[risk]).sum(0)
        E, S1d, D, d = r[dead].sum(), (r[dead, None] * X[dead]).sum(0), d_["w"][dead].sum(), \
            dead.sum()
        steps = range(d) if ties == "efron" else [0]
        m = d if ties == "efron" else 1
        for j in steps:
            f = j / d if ties == "efron" else 0.0
            den = S0 - f * E
            H += D / m / den
            Vh += D / m / den ** 2
            xbar += D / m * (S1 - f * S1d) / den ** 2
    q = (z - center) * H - (xbar - center * H)
    risk_z = np.exp((z - center) @ beta)
    return risk_z * H, risk_z ** 2 * (Vh + q @ V @ q)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_entry_times_weights_strata_by_definition(rossi, ties):
    data = rossi_episodes(rossi)
    cohort = engine.Cohort.from_frame(data, "stop", "arrest", covariates=["fin", "age", "prio"],
                                      start="start", id="id", strata="race", weights="w")
    res = engine.fit(cohort, ties=ties)
    b = res.baseline
    beta, V = res.coef.to_numpy(), res.cov.to_numpy()
    w = data["w"].to_numpy(float)
    center = (data[["fin", "age", "prio"]].to_numpy(float) * w[:, None]).sum(0) / w.sum()
    center[0] = 0.0                             # R's fit$means: a 0/1 column (fin) at 0
    np.testing.assert_allclose(b.center, center, rtol=1e-13)
    newdata = pd.DataFrame({"fin": [0, 1, 1], "age": [20, 30, 41], "prio": [0, 3, 9],
                            "race": [0, 1, 1]})
    times = [3.0, 8.0, 20.0, 30.0, 49.0]
    curves = res.predict_survival(newdata, times=times)
    for k, row in newdata.iterrows():
        z = row[["fin", "age", "prio"]].to_numpy(float)
        for t in times:
            H, var = _by_definition(data, beta, center, ties, row["race"], z, t, V)
            got = curves[(curves["row"] == k) & (curves["time"] == t)].iloc[0]
            assert got["cumhaz"] == pytest.approx(H, rel=1e-10, abs=1e-14)
            assert got["se_cumhaz"] == pytest.approx(np.sqrt(var), rel=1e-8, abs=1e-14)
    table = res.baseline_hazard()
    assert set(table["stratum"]) == {"0", "1"}
    uncentred = res.baseline_hazard(centered=False)
    np.testing.assert_allclose(uncentred["cumhaz"], table["cumhaz"] * np.exp(-center @ beta),
                               rtol=1e-12)


def test_predict_lp_risk_se_by_definition(rossi):
    names = ["fin", "age", "prio"]
    w = 1.0 + np.arange(len(rossi)) % 2
    data = rossi.assign(w=w)
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=names, weights="w")
    res = engine.fit(cohort, ties="efron")
    newdata = rossi.iloc[:7]
    center = (rossi[names].to_numpy(float) * w[:, None]).sum(0) / w.sum()
    center[0] = 0.0                             # R's fit$means: a 0/1 column (fin) at 0
    diff = newdata[names].to_numpy(float) - center
    V = res.cov.to_numpy()
    lp = res.predict(newdata, type="lp")
    np.testing.assert_allclose(lp["fit"], diff @ res.coef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(lp["se"], np.sqrt(np.einsum("ij,jk,ik->i", diff, V, diff)),
                               rtol=1e-12)
    risk = res.predict(newdata, type="risk")
    np.testing.assert_allclose(risk["fit"], np.exp(lp["fit"]), rtol=1e-12)
    # R's convention (book1.Rout.save below prints it): se(lp) sqrt(risk)
    np.testing.assert_allclose(risk["se"], np.exp(lp["fit"] / 2) * lp["se"], rtol=1e-12)
    zero = res.predict(newdata, type="lp", reference="zero")
    np.testing.assert_allclose(zero["fit"], newdata[names].to_numpy(float) @ res.coef,
                               rtol=1e-12)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_expected_is_event_minus_martingale_residual(rossi, ties):
    data = rossi_episodes(rossi)
    cohort = engine.Cohort.from_frame(data, "stop", "arrest", covariates=["fin", "age", "prio"],
                                      start="start", id="id", strata="race", weights="w")
    res = engine.fit(cohort, ties=ties)
    expected = res.predict(type="expected")["fit"].to_numpy()
    martingale = engine.residuals(res).to_numpy()
    np.testing.assert_allclose(expected, data["arrest"] - martingale, rtol=1e-10, atol=1e-12)
    # through newdata (R: the curve's whole increment, even for an event tied at its time)
    again = res.predict(data, type="expected")
    tied = data.groupby(["race", "stop"])["arrest"].transform("sum") > 1
    same = ~(tied & (data["arrest"] == 1)).to_numpy() if ties == "efron" else slice(None)
    assert ties == "breslow" or (~same).sum() > 0
    np.testing.assert_allclose(again["fit"].to_numpy()[same], expected[same], rtol=1e-12)
    # survival = exp(-expected), its se = survival x se(expected)
    surv = res.predict(data.iloc[:20], type="survival")
    np.testing.assert_allclose(surv["fit"], np.exp(-again["fit"].iloc[:20]), rtol=1e-12)
    np.testing.assert_allclose(surv["se"], surv["fit"] * again["se"].iloc[:20], rtol=1e-12)


def test_conf_types(ovarian_fit):
    res, _ = ovarian_fit
    newdata = pd.DataFrame({"age": [55.0], "ecog_ps": [1], "rx": [1]})
    log = res.predict_survival(newdata, conf_type="log")
    loglog = res.predict_survival(newdata, conf_type="log-log", level=0.9)
    H, se = log["cumhaz"].to_numpy(), log["se_cumhaz"].to_numpy()
    np.testing.assert_allclose(log["upper"], np.minimum(np.exp(-H + 1.959963984540054 * se), 1))
    z = 1.6448536269514722
    np.testing.assert_allclose(loglog["lower"], np.exp(-H * np.exp(z * se / H)), rtol=1e-12)
    np.testing.assert_allclose(loglog["upper"], np.exp(-H * np.exp(-z * se / H)), rtol=1e-12)


def test_text_levels_encode_like_the_cohort(rossi):
    data = rossi.assign(group=np.where(rossi["race"] == 1, "b", np.where(rossi["mar"] == 1,
                                                                         "c", "a")))
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=["fin", "group"])
    res = engine.fit(cohort)
    got = res.predict(data.iloc[:30], type="lp", reference="zero")["fit"]
    want = (data["fin"].iloc[:30] * res.coef["fin"]
            + (data["group"].iloc[:30] == "b") * res.coef["group[b]"]
            + (data["group"].iloc[:30] == "c") * res.coef["group[c]"])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bad_newdata_and_fits(ovarian_fit, rossi):
    res, _ = ovarian_fit
    with pytest.raises(engine.CohortError, match=r"lacks the column\(s\) \['ecog_ps'\]"):
        res.predict_survival(pd.DataFrame({"age": [50.0], "rx": [1]}))
    with pytest.raises(engine.CohortError, match="stratum the fitted cohort does not have"):
        res.predict_survival(pd.DataFrame({"age": [50.0], "ecog_ps": [1], "rx": [3]}))
    with pytest.raises(engine.CohortError, match="'age'.*missing"):
        res.predict(pd.DataFrame({"age": [np.nan], "ecog_ps": [1], "rx": [1]}))
    with pytest.warns(engine.DataWarning, match="after the last follow-up"):
        out = res.predict_survival(pd.DataFrame({"age": [50.0], "ecog_ps": [1], "rx": [2]}),
                                   times=[100, 2000])
    assert out["survival"].iloc[0] == 1.0 and np.isnan(out["survival"].iloc[1])
    with pytest.raises(ValueError, match="need each row's follow-up"):
        res.predict(pd.DataFrame({"age": [50.0], "ecog_ps": [1], "rx": [2]}), type="expected")
    with pytest.raises(ValueError, match="type must be one of"):
        res.predict(type="hazard")
    data = rossi.assign(group=np.where(rossi["race"] == 1, "b", "a"))
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=["fin", "group"])
    fitted = engine.fit(cohort)
    with pytest.raises(engine.CohortError, match="level the fitted cohort does not have.*'z'"):
        fitted.predict(pd.DataFrame({"fin": [1], "group": ["z"]}))
    penalised = engine.fit(cohort, penalty=engine.L2(1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = penalised.predict(data.iloc[:3], type="risk")
    assert out["se"].isna().all() and np.isfinite(out["fit"]).all()
    cr = engine.Cohort.from_frame(engine.datasets.load_bmtcrr(), "ftime", "Status",
                                  covariates=["Age"], competing_risks=True)
    with pytest.raises(ValueError, match="predict_cif"):
        engine.fit(cr, model="fine_gray").baseline_hazard()


def test_lp_centred_within_strata(ovarian_fit):
    res, cohort = ovarian_fit
    newdata = pd.DataFrame({"age": [40.0, 60.0], "ecog_ps": [1, 2], "rx": [1, 2]})
    got = res.predict(newdata, reference="strata")
    means = OVARIAN.groupby("rx")[["age", "ecog_ps"]].mean()
    diff = newdata[["age", "ecog_ps"]].to_numpy(float) - means.loc[[1, 2]].to_numpy()
    V = res.cov.to_numpy()
    np.testing.assert_allclose(got["fit"], diff @ res.coef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(got["se"], np.sqrt(np.einsum("ij,jk,ik->i", diff, V, diff)),
                               rtol=1e-12)


def test_therneau_grambsch_test1_against_r():
    """Therneau & Grambsch's appendix data set 1 (Breslow): predict(fit, type=, se.fit=TRUE)
    from R 4.2.2 / survival 3.5-3, and summary(survfit(fit)) / survfit(fit, list(x=2)) from R
    survival's tests/book1.Rout.save.  The saved file's lp and risk predate survival 3.x, which
    centres a 0/1 covariate at 0 (fit$means), not at its mean 0.5 (-0.7376425, 0.7376425)."""
    test1 = pd.DataFrame({"time": [9, 1, 1, 6, 6, 8], "status": [1, 1, 0, 1, 1, 0],
                          "x": [0, 1, 1, 1, 0, 0]})          # R's rows 1, 3-7 (row 2 is NA)
    res = engine.fit(engine.Cohort.from_frame(test1, "time", "status", covariates=["x"]))
    assert res.coef["x"] == pytest.approx(1.4752849, abs=5e-8)
    want = {"lp": ([0.0, 1.4752849, 1.4752849, 1.4752849, 0.0, 0.0],
                   [0.0, 1.2557344, 1.2557344, 1.2557344, 0.0, 0.0]),
            "risk": ([1.0, 4.3722813, 4.3722813, 4.3722813, 1.0, 1.0],
                     [0.0, 2.6257407, 2.6257407, 2.6257407, 0.0, 0.0]),
            "expected": ([1.3333333, 0.2712864, 0.2712864, 1.4574271, 0.3333333, 0.3333333],
                         [1.0540926, 0.2785989, 0.2785989, 1.1069433, 0.3333333, 0.3333333])}
    for kind, (fit, se) in want.items():
        got = res.predict(type=kind)
        np.testing.assert_allclose(got["fit"], fit, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(got["se"], se, rtol=1e-6, atol=1e-12)
    at_mean = res.predict_survival(pd.DataFrame({"x": [0.5]}))
    np.testing.assert_allclose(at_mean["time"], [1, 6, 9])
    np.testing.assert_allclose(at_mean["survival"], [0.8783, 0.4981, 0.0615], atol=5e-5)
    np.testing.assert_allclose(at_mean["std_err"], [0.122, 0.218, 0.150], atol=5e-4)
    np.testing.assert_allclose(at_mean["lower"], [0.66827, 0.21125, 0.00051], atol=5e-6)
    at_2 = res.predict_survival(pd.DataFrame({"x": [2]}))     # R prints 3 significant digits
    for column, printed in (("survival", ["3.05e-01", "1.71e-03", "8.52e-12"]),
                            ("std_err", ["6.50e-01", "1.98e-02", "5.29e-10"]),
                            ("lower", ["4.72e-03", "2.33e-13", "1.22e-64"])):
        assert [f"{v:.2e}" for v in at_2[column]] == printed, column


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_q_sums_equal_their_definition_at_any_times(rossi, ties):
    """Baseline.q_sums (sums over the gaps between the sorted times, one sparse product)
    equals its definition row by row: Q(t) = sum_i x_i r_i (C(min(stop_i, t)) - C(start_i))_+
    less, for Efron, r_i e_i x_i over the events at or before t; at unsorted, repeated times,
    at 0, at an entry time and after the last follow-up."""
    data = rossi_episodes(rossi)
    cohort = engine.Cohort.from_frame(data, "stop", "arrest", covariates=["fin", "age", "prio"],
                                      start="start", id="id", strata="race", weights="w")
    b = engine.fit(cohort, ties=ties).baseline
    md, X = b.md, cohort.X.toarray()
    times = np.array([30.0, 3.0, 30.0, 0.0, 200.0, 8.0, 20.0])
    for s in range(2):
        lo, hi = md.strata_bounds[s], md.strata_bounds[s + 1]
        cum = np.concatenate(([0.0], np.cumsum(b.varhaz[s])))

        def C(x):
            return cum[np.searchsorted(b.times[s], x, side="right")]

        want = np.zeros((times.size, X.shape[1]))
        for i in range(lo, hi):
            row, r = md.order[i], b.r[i]
            for g, t in enumerate(times):
                v = r * max(min(C(md.stop[i]), C(t)) - C(md.start[i]), 0.0)
                if ties == "efron" and b.event[i] and md.stop[i] <= t:
                    k = np.searchsorted(b.times[s], md.stop[i])
                    v -= r * b.tie_term[s][k]
                want[g] += v * X[row]
        np.testing.assert_allclose(b.q_sums(s, times), want, rtol=1e-10, atol=1e-12)


def test_rossi_centring_of_a_0_1_column_against_r(rossi):
    """R 4.2.2 / survival 3.5-3 centres at fit$means, a 0/1 covariate (fin) at 0:
        f <- coxph(Surv(week, arrest) ~ fin + age + prio, rossi)       # Efron
        predict(f, rossi[1:3, ], type = "lp"), type = "risk"
        basehaz(f, centered = TRUE)$hazard[1:3], basehaz(f, centered = FALSE)$hazard[1:3]
    and with case weights and strata:
        rossi$w <- 0.5 + ((seq_len(nrow(rossi)) - 1) %% 7) / 4
        g <- coxph(Surv(week, arrest) ~ fin + age + prio + strata(wexp), rossi, weights = w)
        basehaz(g, centered = TRUE / FALSE): the first cumulative hazards of each stratum."""
    names = ["fin", "age", "prio"]
    res = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest", covariates=names),
                     ties="efron", tol=1e-12)
    assert res.baseline.center[0] == 0.0
    np.testing.assert_allclose(res.predict(rossi.head(3), type="lp")["fit"],
                               [-0.1596691654, 0.9287447944, 1.3461054607], rtol=1e-7)
    np.testing.assert_allclose(res.predict(rossi.head(3), type="risk")["fit"],
                               [0.8524257542, 2.5313298432, 3.8424318512], rtol=1e-7)
    np.testing.assert_allclose(res.baseline_hazard()["cumhaz"][:3],
                               [0.0023710220, 0.0047477897, 0.0071259550], rtol=1e-7)
    np.testing.assert_allclose(res.baseline_hazard(centered=False)["cumhaz"][:3],
                               [0.0092517824, 0.0185259847, 0.0278056402], rtol=1e-7)
    data = rossi.assign(w=0.5 + (np.arange(len(rossi)) % 7) / 4)
    res = engine.fit(engine.Cohort.from_frame(data, "week", "arrest", covariates=names,
                                              strata="wexp", weights="w"),
                     ties="efron", tol=1e-12)
    for centered, want in ((True, {"0": [0.007042906, 0.010083233, 0.014146505]}),
                           (False, {"0": [0.01871597, 0.02679540, 0.03759323],
                                    "1": [0.01032035, 0.02323938, 0.06757953]})):
        table = res.baseline_hazard(centered=centered)
        for stratum, values in want.items():
            np.testing.assert_allclose(table[table["stratum"] == stratum]["cumhaz"][:3],
                                       values, rtol=2e-6)
