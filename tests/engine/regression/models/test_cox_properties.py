"""Property tests (hypothesis) for the Cox engine on small tied data (N = 5..40).

Properties: engine.loglik / engine.gradient equal the brute-force oracle (Breslow, Efron,
weights, strata); row-order invariance; a stratified loglik is the sum of per-stratum
logliks; doubling all case weights doubles the gradient, doubles the loglik up to the
beta-free constant -2 log(2) * (sum of event weights), and leaves the optimum unchanged.

Note on "doubling weights doubles the loglik": with R's case-weight semantics the log partial
likelihood contains log(sum_R w exp(eta)), so l_{2w}(beta) = 2 l_w(beta) - 2 log 2 * sum_D w
(the same for Breslow and for Efron with R's weighted rule). Differences in loglik, the
gradient and the optimum double / stay exactly; the loglik itself picks up that constant.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import oracles as O

engine = pytest.importorskip("engine")

TIES = ["breslow", "efron"]
FN_RTOL = 1e-9   # a function evaluation (same sums, other order): float64 round-off only
FIT_RTOL = 1e-6  # a fitted optimum (design: coefficients agree to 1e-6 relative)

PROPS = settings(max_examples=60, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


@st.composite
def cox_data(draw, min_n=5, max_n=40):
    n = draw(st.integers(min_n, max_n))
    p = draw(st.integers(1, 3))
    time = draw(arrays(np.float64, n, elements=st.integers(1, 6).map(float)))  # heavy ties
    event = draw(arrays(np.int64, n, elements=st.integers(0, 1)))
    assume(event.sum() >= 1)
    X = draw(arrays(np.float64, (n, p), elements=st.integers(-200, 200).map(lambda v: v / 100.0)))
    w = draw(arrays(np.float64, n, elements=st.integers(1, 300).map(lambda v: v / 100.0)))
    g = draw(arrays(np.int64, n, elements=st.integers(0, 2)))
    beta = draw(arrays(np.float64, p, elements=st.integers(-100, 100).map(lambda v: v / 100.0)))
    return dict(time=time, event=event, X=X, w=w, g=g, beta=beta)


def names_for(d):
    return [f"x{j}" for j in range(d["X"].shape[1])]


def make(d, weights=False, strata=False, rows=None, w_scale=1.0):
    """The cohort of ``d``; a drawn column with no information (all zeros, say) is left out
    with a DataWarning, expected here (``at`` accounts for it)."""
    rows = np.arange(len(d["time"])) if rows is None else np.asarray(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", engine.DataWarning)
        return engine.Cohort.from_arrays(
            time=d["time"][rows], event=d["event"][rows], X=d["X"][rows], names=names_for(d),
            strata=d["g"][rows] if strata else None,
            weights=(w_scale * d["w"][rows]) if weights else None,
        )


def at(coh, d, beta):
    """beta restricted to coh.names: the engine may leave out columns that carry no
    information (e.g. constant within the cohort, with a DataWarning); such a column adds
    the same constant to eta in every risk set and cancels from the partial likelihood."""
    names = names_for(d)
    return np.asarray(beta, float)[[names.index(n) for n in coh.names]]


def coef(res, d):
    return pd.Series(res.coef).reindex(names_for(d)).to_numpy(float)


def well_posed_fit(coh, d, ties, weights=True, strata=False):
    """Fit, and reject (assume) data with no finite, moderate MLE: a flat direction (zero
    information at beta = 0: covariate constant within every risk set that has an event)
    or monotone likelihood."""
    H0 = O.cox_hessian(d["time"], d["event"], d["X"], np.zeros(d["X"].shape[1]), ties=ties,
                       **oracle_kw(d, weights, strata))
    assume(np.linalg.eigvalsh(-H0).min() > 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = engine.fit(coh, model="cox", ties=ties)
    b = coef(res, d)
    assume(bool(res.converged) and np.all(np.isfinite(b)) and np.max(np.abs(b)) < 5)
    return res, b


def oracle_kw(d, weights, strata):
    return dict(weights=d["w"] if weights else None, strata=d["g"] if strata else None)


# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("strata", [False, True])
@PROPS
@given(d=cox_data())
def test_loglik_and_gradient_equal_oracle(d, ties, weights, strata):
    coh = make(d, weights, strata)
    kw = oracle_kw(d, weights, strata)
    idx = [names_for(d).index(n) for n in coh.names]
    ll = engine.loglik(coh, d["beta"][idx], ties=ties)
    ref = O.cox_loglik(d["time"], d["event"], d["X"], d["beta"], ties=ties, **kw)
    np.testing.assert_allclose(ll, ref, rtol=FN_RTOL, atol=1e-12)
    gr = np.asarray(engine.gradient(coh, d["beta"][idx], ties=ties), float)
    og = O.cox_gradient(d["time"], d["event"], d["X"], d["beta"], ties=ties, **kw)
    atol = 1e-9 * max(1.0, np.max(np.abs(og)))
    np.testing.assert_allclose(gr, og[idx], rtol=FN_RTOL, atol=atol)
    left_out = np.setdiff1d(np.arange(len(og)), idx)
    # a column the engine leaves out must really carry no information (zero score)
    np.testing.assert_allclose(og[left_out], 0.0, atol=atol, err_msg=f"engine left out {left_out}")


@pytest.mark.parametrize("ties", TIES)
@PROPS
@given(d=cox_data(), perm_seed=st.integers(0, 2**32 - 1))
def test_row_order_invariance_loglik(d, perm_seed, ties):
    perm = np.random.default_rng(perm_seed).permutation(len(d["time"]))
    c1, c2 = make(d, True, True), make(d, True, True, rows=perm)
    assert list(c1.names) == list(c2.names)
    a = engine.loglik(c1, at(c1, d, d["beta"]), ties=ties)
    b = engine.loglik(c2, at(c2, d, d["beta"]), ties=ties)
    np.testing.assert_allclose(b, a, rtol=FN_RTOL, atol=1e-12)


@pytest.mark.slow  # 60 fits to convergence per tie method
@pytest.mark.parametrize("ties", TIES)
@PROPS
@given(d=cox_data(min_n=12), perm_seed=st.integers(0, 2**32 - 1))
def test_row_order_invariance_fit(d, perm_seed, ties):
    perm = np.random.default_rng(perm_seed).permutation(len(d["time"]))
    res, b = well_posed_fit(make(d, True, False), d, ties)
    res2 = engine.fit(make(d, True, False, rows=perm), model="cox", ties=ties)
    np.testing.assert_allclose(coef(res2, d), b, rtol=FIT_RTOL, atol=1e-8)
    np.testing.assert_allclose(float(res2.loglik), float(res.loglik), rtol=FIT_RTOL)


@pytest.mark.slow  # 60 fits to convergence per tie method
@pytest.mark.parametrize("ties", TIES)
@PROPS
@given(d=cox_data(min_n=12))
def test_fit_is_oracle_optimum(d, ties):
    res, b = well_posed_fit(make(d, True, True), d, ties, strata=True)
    kw = oracle_kw(d, True, True)
    g = O.cox_gradient(d["time"], d["event"], d["X"], b, ties=ties, **kw)
    H = O.cox_hessian(d["time"], d["event"], d["X"], b, ties=ties, **kw)
    step = np.linalg.lstsq(-H, g, rcond=None)[0]
    assert np.all(np.abs(step) <= FIT_RTOL * np.maximum(np.abs(b), 1e-3)), (g, step, b)
    np.testing.assert_allclose(float(res.loglik), O.cox_loglik(d["time"], d["event"], d["X"], b, ties=ties, **kw),
                               rtol=FN_RTOL)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("weights", [False, True])
@PROPS
@given(d=cox_data())
def test_stratified_loglik_is_sum_of_strata(d, ties, weights):
    coh = make(d, weights, True)
    total = engine.loglik(coh, at(coh, d, d["beta"]), ties=ties)
    parts = 0.0
    for k in np.unique(d["g"]):
        rows = np.flatnonzero(d["g"] == k)
        if d["event"][rows].sum() == 0:
            continue  # no event: contributes exactly 0
        if rows.size == 1:  # a lone row with an event: w*eta - w*log(w*exp(eta)) = -w log w
            w = d["w"][rows[0]] if weights else 1.0
            parts += -w * np.log(w)
            continue
        coh = make(d, weights, False, rows=rows)
        parts += engine.loglik(coh, at(coh, d, d["beta"]), ties=ties)
    np.testing.assert_allclose(total, parts, rtol=FN_RTOL, atol=1e-12)


@pytest.mark.parametrize("ties", TIES)
@PROPS
@given(d=cox_data())
def test_doubling_weights_at_fixed_beta(d, ties):
    c1, c2 = make(d, True, True), make(d, True, True, w_scale=2.0)
    assert list(c1.names) == list(c2.names)
    beta = at(c1, d, d["beta"])
    l1 = engine.loglik(c1, beta, ties=ties)
    l2 = engine.loglik(c2, beta, ties=ties)
    const = 2.0 * np.log(2.0) * np.sum(d["w"][d["event"] == 1])
    np.testing.assert_allclose(l2, 2.0 * l1 - const, rtol=FN_RTOL, atol=1e-9)
    g1 = np.asarray(engine.gradient(c1, beta, ties=ties), float)
    g2 = np.asarray(engine.gradient(c2, beta, ties=ties), float)
    np.testing.assert_allclose(g2, 2.0 * g1, rtol=FN_RTOL, atol=1e-9 * max(1.0, np.max(np.abs(g1), initial=0)))
    # loglik differences double exactly
    b0 = np.zeros_like(beta)
    d1 = l1 - engine.loglik(c1, b0, ties=ties)
    d2 = l2 - engine.loglik(c2, b0, ties=ties)
    np.testing.assert_allclose(d2, 2.0 * d1, rtol=FN_RTOL, atol=1e-9)


@pytest.mark.slow  # 60 fits to convergence per tie method
@pytest.mark.parametrize("ties", TIES)
@PROPS
@given(d=cox_data(min_n=12))
def test_doubling_weights_leaves_optimum(d, ties):
    res1, b1 = well_posed_fit(make(d, True, False), d, ties)
    res2 = engine.fit(make(d, True, False, w_scale=2.0), model="cox", ties=ties)
    np.testing.assert_allclose(coef(res2, d), b1, rtol=FIT_RTOL, atol=1e-8)
    const = 2.0 * np.log(2.0) * np.sum(d["w"][d["event"] == 1])
    np.testing.assert_allclose(float(res2.loglik), 2.0 * float(res1.loglik) - const, rtol=FIT_RTOL)
    se1 = pd.Series(res1.se_model).reindex(names_for(d)).to_numpy(float)
    se2 = pd.Series(res2.se_model).reindex(names_for(d)).to_numpy(float)
    np.testing.assert_allclose(se2, se1 / np.sqrt(2.0), rtol=FIT_RTOL)  # information doubles
    # sampling weights: the robust variance does not depend on their scale (a degenerate one,
    # every row an event at one tied time so that every score residual is 0 at beta = 0, is
    # NaN with a warning in both)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r1 = pd.Series(res1.se_robust).reindex(names_for(d)).to_numpy(float)
        r2 = pd.Series(res2.se_robust).reindex(names_for(d)).to_numpy(float)
    np.testing.assert_allclose(r2, r1, rtol=FIT_RTOL, equal_nan=True)
