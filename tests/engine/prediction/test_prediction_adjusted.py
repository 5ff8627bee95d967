"""Covariate-adjusted curves (engine.adjusted_curves) against their definition: the average of
predicted curves with the treatment set, the adjusted RMST as the integral of that step curve,
and the delta-method variance with the coefficient derivative taken numerically (the baseline
hazard recomputed at each perturbed coefficient vector) rather than by the engine's Q sums."""
import numpy as np
import pytest

import engine
from engine.regression.baseline import baseline

NAMES = ["fin", "age", "wexp", "mar", "paro", "prio"]
TIMES = [6.0, 15.0, 27.0, 40.0, 51.0]


@pytest.fixture(scope="module")
def fitted(rossi):
    data = rossi.assign(w=1.0 + (np.arange(len(rossi)) % 3) / 2)
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=NAMES, strata="race",
                                      weights="w")
    return engine.fit(cohort, ties="efron"), cohort, data


def _curves(cohort, res, beta, setting, grid):
    """(n, T) curves of every row with fin set to ``setting``, the baseline at ``beta``."""
    b = baseline(cohort, res.problem.model.data, beta, "efron")
    X = cohort.X.toarray()
    X[:, cohort.names.index("fin")] = setting
    r = np.exp(X @ beta - b.offset)
    H0 = np.vstack([b.cumulative(b.hazard, s, grid) for s in range(2)])[cohort.strata]
    return np.exp(-r[:, None] * H0), r, H0


def test_point_estimates_are_averaged_predictions(fitted):
    res, cohort, data = fitted
    out = engine.adjusted_curves(res, "fin", TIMES)
    w = data["w"].to_numpy() / data["w"].sum()
    for a in (0, 1):
        curves = res.predict_survival(data.assign(fin=a), times=TIMES)
        S = curves["survival"].to_numpy().reshape(len(data), len(TIMES))
        got = out.curves[out.curves["level"] == a]["survival"].to_numpy()
        np.testing.assert_allclose(got, w @ S, rtol=1e-12)
    diff = out.contrasts["difference"].to_numpy()
    np.testing.assert_allclose(diff, out.curves["survival"].to_numpy()[5:]
                               - out.curves["survival"].to_numpy()[:5], rtol=1e-12)


def _delta_variance(res, cohort, data, coef_of_curves, grid):
    """Var of sum_a sum_k c[a, k] theta_a(grid[k]) by the module's three terms, the
    coefficient derivative by central differences."""
    beta = res.coef.to_numpy()
    w = data["w"].to_numpy() / data["w"].sum()
    V = res.cov.to_numpy()

    def functional(b_):
        return sum(coef_of_curves[a] @ (w @ _curves(cohort, res, b_, a, grid)[0])
                   for a in (0, 1))

    h = 1e-6
    J = np.array([(functional(beta + h * e) - functional(beta - h * e)) / (2 * h)
                  for e in np.eye(len(beta))])
    var = J @ V @ J
    b = res.baseline
    L_i = 0.0
    loads = {}
    for a in (0, 1):
        S, r, _ = _curves(cohort, res, beta, a, grid)
        L_i = L_i + S @ coef_of_curves[a]
        for s in (0, 1):
            inside = cohort.strata == s
            A = (w[inside] * r[inside]) @ S[inside]            # (T,)
            loads[(a, s)] = np.cumsum((coef_of_curves[a] * A)[::-1])[::-1]
    for s in (0, 1):
        load = loads[(0, s)] + loads[(1, s)]
        cum = b.cumulative(b.varhaz, s, grid)
        var += np.sum(np.diff(np.concatenate(([0.0], cum))) * load ** 2)
    L = w @ L_i
    var += np.sum(w ** 2 * (L_i - L) ** 2)
    return var


def test_a_two_valued_treatment_defaults_to_its_values(rossi):
    """A treatment coded 1/2 is set to 1 and 2 (no extrapolation to 0), as levels=[1, 2]."""
    data = rossi.assign(fin=rossi["fin"] + 1)
    res = engine.fit(engine.Cohort.from_frame(data, "week", "arrest", covariates=NAMES))
    out = engine.adjusted_curves(res, "fin", TIMES)            # DataWarning = error in tests
    assert out.levels == [1.0, 2.0]
    want = engine.adjusted_curves(res, "fin", TIMES, levels=[1, 2])
    np.testing.assert_array_equal(out.curves["survival"], want.curves["survival"])


def test_standard_errors_by_definition(fitted):
    res, cohort, data = fitted
    out = engine.adjusted_curves(res, "fin", TIMES)
    grid = np.array(TIMES)
    for k in (1, 3):
        for a in (0, 1):
            c = {0: np.zeros(5), 1: np.zeros(5)}
            c[a][k] = 1.0
            want = np.sqrt(_delta_variance(res, cohort, data, c, grid))
            got = out.curves[out.curves["level"] == a]["se"].iloc[k]
            assert got == pytest.approx(want, rel=1e-6)
        c = {0: np.zeros(5), 1: np.zeros(5)}
        c[1][k], c[0][k] = 1.0, -1.0
        want = np.sqrt(_delta_variance(res, cohort, data, c, grid))
        assert out.contrasts["se"].iloc[k] == pytest.approx(want, rel=1e-6)


def test_rmst_by_definition(fitted):
    res, cohort, data = fitted
    tau = 45.0
    out = engine.adjusted_curves(res, "fin", TIMES, rmst_tau=tau)
    b = res.baseline
    grid = np.unique(np.concatenate(([0.0], *[t[t < tau] for t in b.times], [tau])))
    width = np.append(np.diff(grid), 0.0)
    w = data["w"].to_numpy() / data["w"].sum()
    for a in (0, 1):
        theta = w @ _curves(cohort, res, res.coef.to_numpy(), a, grid)[0]
        assert out.rmst["rmst"].iloc[a] == pytest.approx(theta @ width, rel=1e-12)
    c = {0: -width, 1: width}
    want = np.sqrt(_delta_variance(res, cohort, data, c, grid))
    assert out.rmst["se"].iloc[2] == pytest.approx(want, rel=1e-6)
    assert out.rmst["rmst"].iloc[2] == pytest.approx(out.rmst["rmst"].iloc[1]
                                                     - out.rmst["rmst"].iloc[0], rel=1e-12)


def test_text_treatment_and_bad_input(rossi):
    data = rossi.assign(arm=np.where(rossi["fin"] == 1, "aid", "none"))
    cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=["arm", "age", "prio"])
    res = engine.fit(cohort)
    out = engine.adjusted_curves(res, "arm", [10.0, 30.0], levels=["none", "aid"], se=False)
    for name in ("none", "aid"):
        want = res.predict_survival(data.assign(arm=name), times=[10.0, 30.0])
        want = want["survival"].to_numpy().reshape(-1, 2).mean(axis=0)
        np.testing.assert_allclose(out.curves[out.curves["level"] == name]["survival"], want,
                                   rtol=1e-12)
    assert out.curves["se"].isna().all()
    with pytest.raises(engine.CohortError, match="no level\\(s\\) \\['placebo'\\]"):
        engine.adjusted_curves(res, "arm", [10.0], levels=["none", "placebo"])
    with pytest.raises(engine.CohortError, match="'dose' is not a covariate"):
        engine.adjusted_curves(res, "dose", [10.0])
    with pytest.raises(ValueError, match="increasing"):
        engine.adjusted_curves(res, "arm", [30.0, 10.0])
    with pytest.warns(engine.DataWarning, match="after the last follow-up"):
        late = engine.adjusted_curves(res, "arm", [10.0, 60.0], se=False)
    assert late.curves["survival"].isna().sum() == 2
    with pytest.raises(ValueError, match="rmst_tau"):
        engine.adjusted_curves(res, "arm", [10.0], rmst_tau=99.0)


@pytest.mark.slow   # 200 refits
def test_delta_method_agrees_with_the_bootstrap(rossi):
    """The delta method leaves out the covariance between the coefficients' and the
    standardisation's terms; the bootstrap (subjects redrawn, refitted) has none left out.
    They agree within the Monte Carlo error of 200 replicates (about 5%)."""
    names = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    times = [10.0, 25.0, 40.0]

    def estimates(data, se):
        cohort = engine.Cohort.from_frame(data, "week", "arrest", covariates=names)
        out = engine.adjusted_curves(engine.fit(cohort, ties="efron"), "fin", times,
                                     rmst_tau=45.0, se=se)
        return out

    full = estimates(rossi, True)
    delta = np.concatenate([full.curves["se"], full.contrasts["se"], full.rmst["se"]])
    rng = np.random.default_rng(1)
    reps = []
    for _ in range(200):
        out = estimates(rossi.iloc[rng.integers(0, len(rossi), len(rossi))]
                        .reset_index(drop=True), False)
        reps.append(np.concatenate([out.curves["survival"], out.contrasts["difference"],
                                    out.rmst["rmst"]]))
    np.testing.assert_allclose(np.std(reps, axis=0, ddof=1), delta, rtol=0.15)


def _percentile_bands_by_refits(data, fit_args, treatment, times, B, seed, cif=False,
                                rmst_tau=None):
    """Bootstrap percentile limits by the definition: rows redrawn with the engine's counts,
    a new cohort of the repeated rows fitted from scratch, the curves (and RMSTs) averaged
    over it."""
    from engine.regression.drivers.resampling import bootstrap_counts
    reps = []
    for k in range(B):
        counts = bootstrap_counts(len(data), seed, k)
        drawn = data.iloc[np.repeat(np.arange(len(data)), counts)].reset_index(drop=True)
        cohort = engine.Cohort.from_frame(drawn, **fit_args[0])
        out = engine.adjusted_curves(engine.fit(cohort, **fit_args[1]), treatment, times,
                                     se=False, rmst_tau=rmst_tau)
        values = out.curves["cif" if cif else "survival"].to_numpy()
        if rmst_tau is not None:
            values = np.concatenate((values, out.rmst["rmst"].to_numpy()))
        reps.append(values)
    return np.quantile(np.array(reps), [0.025, 0.975], axis=0)


def test_bootstrap_bands_by_refits(rossi):
    args = (dict(time="week", event="arrest", covariates=["fin", "age", "prio"]),
            dict(ties="breslow"))       # duplicated rows = integer weights under Breslow ties
    res = engine.fit(engine.Cohort.from_frame(rossi, **args[0]), **args[1])
    out = engine.adjusted_curves(res, "fin", [15.0, 40.0], bootstrap=20, seed=3,
                                 rmst_tau=45.0)
    lo, hi = _percentile_bands_by_refits(rossi, args, "fin", [15.0, 40.0], 20, 3,
                                         rmst_tau=45.0)
    np.testing.assert_allclose(out.curves["boot_lower"], lo[:4], rtol=1e-6)
    np.testing.assert_allclose(out.curves["boot_upper"], hi[:4], rtol=1e-6)
    np.testing.assert_allclose(out.rmst["boot_lower"], lo[4:], rtol=1e-6)
    np.testing.assert_allclose(out.rmst["boot_upper"], hi[4:], rtol=1e-6)
    assert (out.contrasts["boot_lower"] < out.contrasts["difference"]).all()
    assert (out.contrasts["difference"] < out.contrasts["boot_upper"]).all()


def test_bootstrap_bands_fine_gray_by_refits():
    data = engine.datasets.load_bmtcrr()
    data = data.assign(male=(data["Sex"] == "M").astype(int))
    args = (dict(time="ftime", event="Status", covariates=["Age", "male"],
                 competing_risks=True), dict(model="fine_gray", cause=1))
    res = engine.fit(engine.Cohort.from_frame(data, **args[0]), **args[1])
    out = engine.adjusted_curves(res, "male", [6.0, 24.0], bootstrap=20, seed=5)
    lo, hi = _percentile_bands_by_refits(data, args, "male", [6.0, 24.0], 20, 5, cif=True)
    np.testing.assert_allclose(out.curves["boot_lower"], lo, rtol=1e-6)
    np.testing.assert_allclose(out.curves["boot_upper"], hi, rtol=1e-6)
