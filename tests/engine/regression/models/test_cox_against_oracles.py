"""Unpenalised Cox fits of engine/ against independent oracles.

Oracles: the brute-force definitions in tests/support/oracles.py, statsmodels PHReg (Breslow and
Efron, strata), lifelines CoxPHFitter (Efron, strata, case weights) and R coxph's published
rossi values (R survival's coxph on rossi, Efron ties). Tolerance: 1e-6 relative on coef, loglik and se
(the design's "Checking the numbers"); the published values at their printed precision.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats

import oracles as O

engine = pytest.importorskip("engine")

RTOL = 1e-6
ATOL = 1e-9  # negligible next to every coefficient in these cases (all |coef| > 1e-2)
ROSSI_COVS = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
ROSSI_NOT_RACE = ["fin", "age", "wexp", "mar", "paro", "prio"]
SOLVERS = ["auto", "ccd", "newton"]

# R coxph (Efron) on rossi, printed to 7 decimals.
R_ROSSI_EFRON = {
    "fin": -0.3794222, "age": -0.0574377, "race": 0.3138998, "wexp": -0.1497957,
    "mar": -0.4337039, "paro": -0.0848711, "prio": 0.0914971,
}
# R coxph(... + strata(race)) (Efron), printed to 4 decimals.
R_ROSSI_STRATA_RACE = {
    "fin": -0.3788, "age": -0.0576, "wexp": -0.1427, "mar": -0.4388, "paro": -0.0858, "prio": 0.0922,
}


# ---------------------------------------------------------------------------------------
# Reference fits
# ---------------------------------------------------------------------------------------

class Ref:
    """A reference optimum: coef, loglik, se (arrays in `names` order)."""

    def __init__(self, names, coef, loglik, se, source):
        self.names = list(names)
        self.coef = np.asarray(coef, float)
        self.loglik = float(loglik)
        self.se = np.asarray(se, float)
        self.source = source


def statsmodels_fit(time, event, X, ties, strata=None, names=None):
    """PHReg at tight tolerance, polished with two Newton steps on PHReg's own score/Hessian."""
    from statsmodels.duration.hazard_regression import PHReg

    X = X.toarray() if sp.issparse(X) else np.asarray(X, float)
    m = PHReg(np.asarray(time, float), X, status=np.asarray(event), ties=ties, strata=strata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = m.fit(method="newton", maxiter=200, tol=1e-14, disp=0).params
    for _ in range(2):
        b = b - np.linalg.solve(m.hessian(b), m.score(b))
    assert np.max(np.abs(m.score(b))) < 1e-8 * max(1.0, abs(m.loglike(b)))
    se = np.sqrt(np.diag(np.linalg.inv(-m.hessian(b))))
    names = names or [f"x{j}" for j in range(X.shape[1])]
    return Ref(names, b, m.loglike(b), se, f"statsmodels PHReg ({ties})")


def lifelines_fit(df, time, event, covariates, strata=None, weights=None):
    from lifelines import CoxPHFitter

    cols = list(covariates) + [time, event]
    if strata:
        cols += [strata] if isinstance(strata, str) else list(strata)
    if weights:
        cols.append(weights)
    cph = CoxPHFitter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-integer weights / convergence chatter
        cph.fit(
            df[cols], time, event, strata=strata, weights_col=weights, robust=False,
            fit_options=dict(precision=1e-14, max_steps=500),
        )
    p = cph.params_.reindex(covariates)
    return Ref(covariates, p.values, cph.log_likelihood_,
               cph.standard_errors_.reindex(covariates).values, "lifelines CoxPHFitter (efron)")


def oracle_fit(time, event, X, ties, weights=None, strata=None, names=None):
    """Newton on the brute-force definitions (from 0), to machine precision."""
    X = np.asarray(X, float)
    b = np.zeros(X.shape[1])
    for _ in range(100):
        g = O.cox_gradient(time, event, X, b, weights, strata, ties)
        H = O.cox_hessian(time, event, X, b, weights, strata, ties)
        step = np.linalg.solve(H, g)
        b = b - step
        if np.max(np.abs(step)) < 1e-13 * max(1.0, np.max(np.abs(b))):
            break
    else:
        raise AssertionError("oracle Newton did not converge")
    H = O.cox_hessian(time, event, X, b, weights, strata, ties)
    se = np.sqrt(np.diag(np.linalg.inv(-H)))
    names = names or [f"x{j}" for j in range(X.shape[1])]
    return Ref(names, b, O.cox_loglik(time, event, X, b, weights, strata, ties), se, f"oracle ({ties})")


# ---------------------------------------------------------------------------------------
# Assertions
# ---------------------------------------------------------------------------------------

def _series(res_attr, names):
    s = pd.Series(res_attr)
    missing = [n for n in names if n not in s.index]
    assert not missing, f"result lacks {missing}; has {list(s.index)}"
    return s.reindex(names).to_numpy(dtype=float)


def assert_matches(res, ref: Ref, rtol=RTOL, se=True, loglik=True):
    coef = _series(res.coef, ref.names)
    np.testing.assert_allclose(coef, ref.coef, rtol=rtol, atol=ATOL,
                               err_msg=f"coef vs {ref.source} ({ref.names})")
    if loglik:
        np.testing.assert_allclose(float(res.loglik), ref.loglik, rtol=rtol, atol=0,
                                   err_msg=f"loglik vs {ref.source}")
    if se:
        np.testing.assert_allclose(_series(res.se, ref.names), ref.se, rtol=rtol, atol=0,
                                   err_msg=f"se vs {ref.source}")


def assert_oracle_optimum(res, time, event, X, ties, weights=None, strata=None, names=None, rtol=RTOL):
    """Score = 0 at res.coef, in scale-free form: the oracle's Newton step from res.coef
    (H^-1 g, i.e. the distance to the true optimum to second order) is below rtol relative;
    and res.loglik equals the oracle's loglik at res.coef."""
    names = names or list(pd.Series(res.coef).index)
    b = _series(res.coef, names)
    g = O.cox_gradient(time, event, X, b, weights, strata, ties)
    H = O.cox_hessian(time, event, X, b, weights, strata, ties)
    step = np.linalg.solve(-H, g)
    scale = np.maximum(np.abs(b), 1e-3)
    assert np.all(np.abs(step) <= rtol * scale), (
        f"not at the oracle optimum: gradient {g}, Newton step {step}, coef {b}")
    ll = O.cox_loglik(time, event, X, b, weights, strata, ties)
    np.testing.assert_allclose(float(res.loglik), ll, rtol=1e-9, err_msg="res.loglik != oracle loglik at res.coef")


def fit(coh, **kw):
    kw.setdefault("model", "cox")
    return engine.fit(coh, **kw)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------

def heavy_ties(n=300, seed=11):
    """Integer times 1..5 (massive ties), three covariates with clear effects."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=n), rng.integers(0, 2, n), rng.uniform(-1, 1, n)]
    eta = X @ np.array([0.6, -0.8, 0.5])
    t = np.clip(np.ceil(rng.exponential(1.0 / np.exp(eta)) * 2.5), 1, 5)
    e = (rng.uniform(size=n) < 0.7).astype(int)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["t"], df["e"] = t, e
    df["w"] = rng.uniform(0.3, 2.5, n)            # non-integer case weights
    df["wi"] = rng.integers(1, 4, n)              # integer case weights 1..3
    df["g"] = rng.integers(0, 3, n)               # three strata
    return df


def two_row_strata(n=400, seed=5):
    """N/2 strata of two rows each: every stratum is a pair (matched-pairs design)."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=n), rng.integers(0, 2, n)]
    eta = X @ np.array([0.7, -0.6])
    t = np.round(rng.exponential(1.0 / np.exp(eta)), 3) + 0.001
    e = (rng.uniform(size=n) < 0.8).astype(int)
    df = pd.DataFrame(X, columns=["a", "b"])
    df["t"], df["e"] = t, e
    df["pair"] = np.repeat(np.arange(n // 2), 2)
    return df


@functools.lru_cache(maxsize=None)
def sparse_case(n=8_000, p=50, density=0.05, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csc", random_state=rng, data_rvs=lambda k: np.ones(k))
    beta = rng.choice([-1, 1], p) * rng.uniform(0.2, 0.8, p)
    eta = X @ beta
    t_ev = rng.exponential(1.0 / np.exp(eta))
    t_c = rng.exponential(2.0, n)
    time = np.ceil(np.minimum(t_ev, t_c) * 200)  # integer "days": ties present
    event = (t_ev <= t_c).astype(int)
    return time, event, X


# ---------------------------------------------------------------------------------------
# The oracles themselves
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("stratified", [False, True])
def test_oracle_loglik_gradient_hessian_match_statsmodels(rossi, ties, stratified):
    from statsmodels.duration.hazard_regression import PHReg

    X = rossi[ROSSI_COVS].to_numpy(float)
    t, e = rossi.week.to_numpy(), rossi.arrest.to_numpy()
    st = rossi.race.to_numpy() if stratified else None
    m = PHReg(t, X, status=e, ties=ties, strata=st)
    rng = np.random.default_rng(0)
    for b in (np.zeros(7), np.array(list(R_ROSSI_EFRON.values())), rng.normal(0, 0.1, 7)):
        np.testing.assert_allclose(O.cox_loglik(t, e, X, b, strata=st, ties=ties), m.loglike(b), rtol=1e-12)
        np.testing.assert_allclose(O.cox_gradient(t, e, X, b, strata=st, ties=ties), m.score(b),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(O.cox_hessian(t, e, X, b, strata=st, ties=ties), m.hessian(b),
                                   rtol=1e-9, atol=1e-8)


def test_oracles_agree_with_each_other():
    df = heavy_ties()
    X, t, e, w = df[["a", "b", "c"]].to_numpy(), df.t.to_numpy(), df.e.to_numpy(), df.w.to_numpy()
    b = np.array([0.3, -0.2, 0.1])
    # no ties at all -> Efron == Breslow
    tt = t + np.arange(len(t)) * 1e-6
    for ww in (None, w):
        assert O.efron_loglik(tt, e, X, b, ww) == pytest.approx(O.breslow_loglik(tt, e, X, b, ww), rel=1e-13)
        np.testing.assert_allclose(O.efron_gradient(tt, e, X, b, ww), O.breslow_gradient(tt, e, X, b, ww), rtol=1e-12)
    # with ties they differ
    assert abs(O.efron_loglik(t, e, X, b) - O.breslow_loglik(t, e, X, b)) > 1.0
    # gradient and Hessian are the derivatives of the loglik (central differences)
    for ties in ("breslow", "efron"):
        h = 1e-6
        eye = np.eye(3)
        gn = [(O.cox_loglik(t, e, X, b + h * eye[j], w, df.g, ties) - O.cox_loglik(t, e, X, b - h * eye[j], w, df.g, ties))
              / (2 * h) for j in range(3)]
        np.testing.assert_allclose(O.cox_gradient(t, e, X, b, w, df.g, ties), gn, rtol=1e-6, atol=1e-6)
        Hn = [(O.cox_gradient(t, e, X, b + h * eye[j], w, df.g, ties) - O.cox_gradient(t, e, X, b - h * eye[j], w, df.g, ties))
              / (2 * h) for j in range(3)]
        np.testing.assert_allclose(O.cox_hessian(t, e, X, b, w, df.g, ties), np.array(Hn), rtol=1e-6, atol=1e-6)
    # stratified = sum over strata
    for ties in ("breslow", "efron"):
        tot = sum(O.cox_loglik(t[df.g == k], e[df.g == k], X[df.g == k], b, w[df.g == k], None, ties) for k in range(3))
        assert O.cox_loglik(t, e, X, b, w, df.g, ties) == pytest.approx(tot, rel=1e-13)
    # the oracle optimum is statsmodels' optimum
    for ties in ("breslow", "efron"):
        a, s = oracle_fit(t, e, X, ties), statsmodels_fit(t, e, X, ties)
        np.testing.assert_allclose(a.coef, s.coef, rtol=1e-10)
        np.testing.assert_allclose(a.se, s.se, rtol=1e-10)


def test_lifelines_weighted_efron_is_r_rule():
    """lifelines' weighted Efron equals the R rule coded in the oracle (checked, not assumed)."""
    df = heavy_ties()
    X, t, e, w = df[["a", "b", "c"]].to_numpy(), df.t.to_numpy(), df.e.to_numpy(), df.w.to_numpy()
    lf = lifelines_fit(df, "t", "e", ["a", "b", "c"], weights="w")
    orc = oracle_fit(t, e, X, "efron", weights=w, names=["a", "b", "c"])
    np.testing.assert_allclose(lf.coef, orc.coef, rtol=1e-9)
    np.testing.assert_allclose(lf.loglik, orc.loglik, rtol=1e-12)
    np.testing.assert_allclose(lf.se, orc.se, rtol=1e-8)


# ---------------------------------------------------------------------------------------
# rossi
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rossi_cohort(rossi):
    return engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=ROSSI_COVS)


@pytest.mark.parametrize("solver", SOLVERS)
def test_rossi_efron_published_r_values(rossi_cohort, solver):
    res = fit(rossi_cohort, ties="efron", solver=solver)
    coef = _series(res.coef, ROSSI_COVS)
    np.testing.assert_allclose(coef, list(R_ROSSI_EFRON.values()), rtol=0, atol=5e-8,
                               err_msg="R coxph (Efron) published rossi coefficients, 7 decimals")
    assert res.converged


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_rossi_vs_statsmodels_and_oracle(rossi, rossi_cohort, ties, solver):
    X = rossi[ROSSI_COVS].to_numpy(float)
    t, e = rossi.week.to_numpy(), rossi.arrest.to_numpy()
    res = fit(rossi_cohort, ties=ties, solver=solver)
    assert_matches(res, statsmodels_fit(t, e, X, ties, names=ROSSI_COVS))
    assert_oracle_optimum(res, t, e, X, ties, names=ROSSI_COVS)
    assert res.converged
    assert isinstance(res.n_iter, (int, np.integer)) and res.n_iter > 0
    assert isinstance(res.timings, dict)


def test_rossi_efron_vs_lifelines(rossi, rossi_cohort):
    res = fit(rossi_cohort, ties="efron")
    assert_matches(res, lifelines_fit(rossi, "week", "arrest", ROSSI_COVS))


def test_rossi_summary_columns(rossi, rossi_cohort):
    res = fit(rossi_cohort, ties="efron")
    s = res.summary
    assert list(s.columns)[:6] == ["coef", "hr", "se", "hr_lower", "hr_upper", "p"]
    s = s.reindex(ROSSI_COVS)
    lf = lifelines_fit(rossi, "week", "arrest", ROSSI_COVS)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(s["hr"], np.exp(lf.coef), rtol=RTOL)
    np.testing.assert_allclose(s["hr_lower"], np.exp(lf.coef - z * lf.se), rtol=RTOL)
    np.testing.assert_allclose(s["hr_upper"], np.exp(lf.coef + z * lf.se), rtol=RTOL)
    np.testing.assert_allclose(s["p"], 2 * stats.norm.sf(np.abs(lf.coef / lf.se)), rtol=RTOL)


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_rossi_strata_race(rossi, ties):
    coh = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=ROSSI_NOT_RACE, strata="race")
    res = fit(coh, ties=ties)
    X = rossi[ROSSI_NOT_RACE].to_numpy(float)
    t, e, st = rossi.week.to_numpy(), rossi.arrest.to_numpy(), rossi.race.to_numpy()
    assert_matches(res, statsmodels_fit(t, e, X, ties, strata=st, names=ROSSI_NOT_RACE))
    assert_oracle_optimum(res, t, e, X, ties, strata=st, names=ROSSI_NOT_RACE)
    if ties == "efron":
        np.testing.assert_allclose(_series(res.coef, ROSSI_NOT_RACE), list(R_ROSSI_STRATA_RACE.values()),
                                   rtol=0, atol=5e-5, err_msg="R coxph strata(race), 4 decimals")
        assert_matches(res, lifelines_fit(rossi, "week", "arrest", ROSSI_NOT_RACE, strata=["race"]))


def test_rossi_strata_list_equals_string(rossi):
    a = fit(engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=ROSSI_NOT_RACE,
                                     strata="race"), ties="efron")
    b = fit(engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=ROSSI_NOT_RACE,
                                     strata=["race"]), ties="efron")
    np.testing.assert_allclose(_series(a.coef, ROSSI_NOT_RACE), _series(b.coef, ROSSI_NOT_RACE), rtol=1e-12)


def test_rossi_two_strata_columns(rossi):
    covs = ["fin", "age", "mar", "paro", "prio"]
    coh = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=covs, strata=["wexp", "race"])
    res = fit(coh, ties="efron")
    st = rossi.wexp.to_numpy() * 2 + rossi.race.to_numpy()
    assert_matches(res, statsmodels_fit(rossi.week, rossi.arrest, rossi[covs].to_numpy(float), "efron",
                                        strata=st, names=covs))
    assert_matches(res, lifelines_fit(rossi, "week", "arrest", covs, strata=["wexp", "race"]))


# ---------------------------------------------------------------------------------------
# Heavy ties, weights, strata extremes
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_heavy_ties(ties, solver):
    df = heavy_ties()
    covs = ["a", "b", "c"]
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs)
    res = fit(coh, ties=ties, solver=solver)
    X, t, e = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy()
    assert_matches(res, statsmodels_fit(t, e, X, ties, names=covs))
    assert_oracle_optimum(res, t, e, X, ties, names=covs)
    if ties == "efron":
        assert_matches(res, lifelines_fit(df, "t", "e", covs))


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_heavy_ties_stratified(ties):
    df = heavy_ties()
    covs = ["a", "b", "c"]
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, strata="g")
    res = fit(coh, ties=ties)
    X, t, e = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy()
    assert_matches(res, statsmodels_fit(t, e, X, ties, strata=df.g.to_numpy(), names=covs))
    assert_oracle_optimum(res, t, e, X, ties, strata=df.g.to_numpy(), names=covs)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_noninteger_case_weights(ties):
    df = heavy_ties()
    covs = ["a", "b", "c"]
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, weights="w")
    res = fit(coh, ties=ties, variance="model")     # the oracles' SEs are model-based
    X, t, e, w = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy(), df.w.to_numpy()
    assert_matches(res, oracle_fit(t, e, X, ties, weights=w, names=covs))
    assert_oracle_optimum(res, t, e, X, ties, weights=w, names=covs)
    if ties == "efron":
        # lifelines' weighted Efron is R's rule (see test_lifelines_weighted_efron_is_r_rule)
        assert_matches(res, lifelines_fit(df, "t", "e", covs, weights="w"))


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_noninteger_case_weights_stratified(ties):
    df = heavy_ties()
    covs = ["a", "b", "c"]
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, weights="w", strata="g")
    res = fit(coh, ties=ties, variance="model")     # the oracles' SEs are model-based
    X, t, e, w = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy(), df.w.to_numpy()
    assert_matches(res, oracle_fit(t, e, X, ties, weights=w, strata=df.g.to_numpy(), names=covs))
    if ties == "efron":
        assert_matches(res, lifelines_fit(df, "t", "e", covs, weights="w", strata=["g"]))


def test_integer_weights_equal_replicated_rows_breslow():
    df = heavy_ties()
    covs = ["a", "b", "c"]
    rep = df.loc[df.index.repeat(df.wi)].reset_index(drop=True)
    a = fit(engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, weights="wi"), ties="breslow")
    b = fit(engine.Cohort.from_frame(rep, time="t", event="e", covariates=covs), ties="breslow")
    ref = Ref(covs, _series(b.coef, covs), b.loglik, _series(b.se, covs), "engine on replicated rows")
    assert_matches(a, ref)
    assert_matches(b, statsmodels_fit(rep.t, rep.e, rep[covs].to_numpy(), "breslow", names=covs))


def test_integer_weights_equal_replicated_rows_efron_when_event_weights_are_one():
    """Efron with case weights (R's rule) equals replication only where no event row is
    replicated (a replicated event is a new tie under Efron); weight the censored rows only."""
    df = heavy_ties()
    covs = ["a", "b", "c"]
    df["wc"] = np.where(df.e == 1, 1, df.wi)
    rep = df.loc[df.index.repeat(df.wc)].reset_index(drop=True)
    a = fit(engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, weights="wc"), ties="efron")
    ref = statsmodels_fit(rep.t, rep.e, rep[covs].to_numpy(), "efron", names=covs)
    assert_matches(a, ref)


def test_one_stratum_equals_unstratified(rossi):
    df = rossi.assign(one="all")
    a = fit(engine.Cohort.from_frame(df, time="week", event="arrest", covariates=ROSSI_COVS, strata="one"),
            ties="efron")
    b = fit(engine.Cohort.from_frame(df, time="week", event="arrest", covariates=ROSSI_COVS), ties="efron")
    ref = Ref(ROSSI_COVS, _series(b.coef, ROSSI_COVS), b.loglik, _series(b.se, ROSSI_COVS), "unstratified")
    assert_matches(a, ref, rtol=1e-9)
    np.testing.assert_allclose(_series(a.coef, ROSSI_COVS), list(R_ROSSI_EFRON.values()), atol=5e-8, rtol=0)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_n_over_2_strata_of_two_rows(ties):
    df = two_row_strata()
    covs = ["a", "b"]
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, strata="pair")
    res = fit(coh, ties=ties)
    X, t, e, st = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy(), df.pair.to_numpy()
    assert_matches(res, statsmodels_fit(t, e, X, ties, strata=st, names=covs))
    assert_oracle_optimum(res, t, e, X, ties, strata=st, names=covs)
    # same through from_arrays
    coh2 = engine.Cohort.from_arrays(time=t, event=e, X=X, names=covs, strata=st)
    res2 = fit(coh2, ties=ties)
    np.testing.assert_allclose(_series(res2.coef, covs), _series(res.coef, covs), rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_large_sparse_from_arrays_vs_statsmodels(ties):
    time, event, X = sparse_case()
    names = [f"v{j}" for j in range(X.shape[1])]
    coh = engine.Cohort.from_arrays(time=time, event=event, X=X, names=names)
    res = fit(coh, ties=ties)
    assert_matches(res, _sparse_ref(ties))
    assert res.converged


@functools.lru_cache(maxsize=None)
def _sparse_ref(ties):
    time, event, X = sparse_case()
    return statsmodels_fit(time, event, X, ties, names=[f"v{j}" for j in range(X.shape[1])])


@pytest.mark.slow
def test_large_sparse_csr_and_dense_inputs_agree():
    time, event, X = sparse_case()
    names = [f"v{j}" for j in range(X.shape[1])]
    a = fit(engine.Cohort.from_arrays(time=time, event=event, X=X.tocsr(), names=names), ties="breslow")
    b = fit(engine.Cohort.from_arrays(time=time, event=event, X=X.toarray(), names=names), ties="breslow")
    ref = _sparse_ref("breslow")
    assert_matches(a, ref)
    assert_matches(b, ref)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_solvers_agree(rossi, ties):
    coh = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=ROSSI_NOT_RACE, strata="race")
    fits = {s: fit(coh, ties=ties, solver=s) for s in SOLVERS}
    base = fits["newton"]
    ref = Ref(ROSSI_NOT_RACE, _series(base.coef, ROSSI_NOT_RACE), base.loglik, _series(base.se, ROSSI_NOT_RACE),
              "solver=newton")
    for s in ("auto", "ccd"):
        assert_matches(fits[s], ref)
        assert fits[s].converged


# ---------------------------------------------------------------------------------------
# engine.loglik / engine.gradient at a given beta
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("case", ["plain", "weights", "strata", "weights+strata"])
def test_engine_loglik_and_gradient_equal_oracle(ties, case):
    df = heavy_ties()
    covs = ["a", "b", "c"]
    w = "w" if "weights" in case else None
    g = "g" if "strata" in case else None
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=covs, weights=w, strata=g)
    assert list(coh.names) == covs
    X, t, e = df[covs].to_numpy(), df.t.to_numpy(), df.e.to_numpy()
    ww = None if w is None else df.w.to_numpy()
    gg = None if g is None else df.g.to_numpy()
    for b in (np.zeros(3), np.array([0.5, -0.4, 0.3]), np.array([3.0, -2.0, 4.0])):
        ll = engine.loglik(coh, b, ties=ties)
        np.testing.assert_allclose(ll, O.cox_loglik(t, e, X, b, ww, gg, ties), rtol=1e-9)
        gr = np.asarray(engine.gradient(coh, b, ties=ties), float)
        og = O.cox_gradient(t, e, X, b, ww, gg, ties)
        np.testing.assert_allclose(gr, og, rtol=1e-9, atol=1e-9 * np.max(np.abs(og)))


# ---------------------------------------------------------------------------------------
# Monotone likelihood (a diverging coefficient)
# ---------------------------------------------------------------------------------------

def monotone_data(sign=+1, seed=8):
    """`sep` separates: the 10 rows with sep = 1 all have events at t = 1..10, while every
    sep = 0 row is still at risk then (times 11..40). At each of those event times the dying
    row has the largest sep in the risk set, and after t = 10 no sep = 1 row is at risk: the
    likelihood increases monotonically in beta_sep (to +inf; with sep -> -sep, to -inf).
    `z` varies inside both groups, so its coefficient stays finite."""
    rng = np.random.default_rng(seed)
    n1, n0 = 10, 30
    sep = np.r_[np.ones(n1), np.zeros(n0)] * sign
    time = np.r_[np.arange(1, n1 + 1), 11 + np.arange(n0) // 2].astype(float)  # ties after t = 10
    event = np.r_[np.ones(n1), (rng.uniform(size=n0) < 0.7)].astype(int)
    z = rng.normal(size=n1 + n0) - 0.05 * time  # earlier death with larger z: a clear z effect
    return pd.DataFrame({"t": time, "e": event, "sep": sep, "z": z})


def _limit_z(df, ties, sign):
    """Coefficient of z in the limit beta_sep -> sign*inf (oracle Newton in z, beta_sep fixed huge)."""
    X = df[["sep", "z"]].to_numpy()
    b = np.array([sign * 60.0, 0.0])  # exp(-60) ~ 1e-26: the limit to double precision
    for _ in range(100):
        g = O.cox_gradient(df.t, df.e, X, b, ties=ties)[1]
        h = O.cox_hessian(df.t, df.e, X, b, ties=ties)[1, 1]
        b[1] -= g / h
        if abs(g / h) < 1e-14:
            break
    return b[1]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("ties", ["breslow", "efron"])
@pytest.mark.parametrize("sign", [+1, -1])
def test_monotone_likelihood_warns_and_returns_inf(sign, ties, solver):
    df = monotone_data(sign)
    # the construction really is monotone in beta_sep (oracle loglik strictly increasing)
    X = df[["sep", "z"]].to_numpy()
    lls = [O.cox_loglik(df.t, df.e, X, [sign * s, 0.1], ties=ties) for s in (0, 1, 3, 10, 30)]
    assert np.all(np.diff(lls) > 0)
    coh = engine.Cohort.from_frame(df, time="t", event="e", covariates=["sep", "z"])
    assert hasattr(engine, "MonotoneLikelihoodWarning")
    with pytest.warns(engine.MonotoneLikelihoodWarning, match="sep"):
        res = fit(coh, ties=ties, solver=solver)
    c = pd.Series(res.coef)
    assert c["sep"] == sign * np.inf, f"diverging coefficient should be {sign * np.inf}, got {c['sep']!r}"
    assert np.isfinite(c["z"]), c
    np.testing.assert_allclose(c["z"], _limit_z(df, ties, sign), rtol=RTOL, atol=ATOL,
                               err_msg="finite coefficient should be its limit as beta_sep -> inf")
    assert isinstance(res.converged, (bool, np.bool_))
    assert np.isfinite(res.loglik)
