"""Propensity scores, preference scores, PS strata, greedy caliper matching and covariate
balance, against direct definitions written here."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine.comparative.balance import (covariate_balance, matched_weights,
    standardized_differences, stratum_weights)
from engine.comparative.matching import match_on_ps
from engine.comparative.ps import fit_propensity, preference_score, stratify


def _confounded(n=800, p=20, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, p)) < 0.3).astype(float)
    logit = -0.3 + X[:, :4] @ np.array([1.0, -0.8, 0.6, 0.5])
    treatment = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return sp.csc_matrix(X), treatment, [f"c{j}" for j in range(p)]


def test_propensity_score_is_the_logistic_fit():
    X, z, names = _confounded()
    ps = fit_propensity(X, z, names, penalty=engine.L1(2.0))
    direct = engine.fit(engine.Cohort.from_arrays(time=np.ones(z.size), event=z, X=X,
                                                  names=names),
                        model="logistic", penalty=engine.L1(2.0), tol=1e-8)
    eta = direct.coef.iloc[0] + X @ direct.coef.iloc[1:].to_numpy()
    np.testing.assert_allclose(ps.ps, 1 / (1 + np.exp(-eta)), rtol=1e-10)
    assert ps.cv is None and ps.coefficients.index[0] in names + ["(intercept)"]


def test_cross_validated_propensity_score():
    X, z, names = _confounded()
    ps = fit_propensity(X, z, names, folds=5, grid=6)
    assert ps.cv is not None and ps.penalty == ps.cv.penalty
    assert set(ps.coefficients.index) >= {"c0", "c1"}
    assert np.all((ps.ps > 0) & (ps.ps < 1))


def test_preference_score_walker():
    ps = np.array([0.1, 0.25, 0.5, 0.9])
    z = np.array([1, 0, 0, 0])                       # share treated 0.25
    f = preference_score(ps, z)
    assert f[1] == pytest.approx(0.5)
    odds = (ps / (1 - ps)) / (0.25 / 0.75)
    np.testing.assert_allclose(f, odds / (1 + odds))


@pytest.mark.parametrize("k", [1, 5, 10])
def test_strata_are_equal_sized_quantile_groups(k):
    ps = np.random.default_rng(1).random(1000)
    s = stratify(ps, k)
    assert np.array_equal(np.bincount(s), np.full(k, 1000 // k))
    assert all(ps[s == a].max() < ps[s == a + 1].min() for a in range(k - 1))


def _greedy_reference(logit, z, ratio, width, seed):
    """Greedy matching by brute force: each round, targets in the same random order take the
    nearest unused comparator (ties to the higher logit) within the caliper."""
    targets = np.flatnonzero(z == 1)
    targets = targets[np.random.default_rng(seed).permutation(targets.size)]
    free = set(np.flatnonzero(z == 0).tolist())
    sets = np.full(z.size, -1)
    for _ in range(ratio):
        for t in targets:
            if not free:
                break
            c = min(free, key=lambda c: (abs(logit[c] - logit[t]), -logit[c]))
            if abs(logit[c] - logit[t]) <= width:
                free.remove(c)
                sets[c] = sets[t] = t
    return sets


@pytest.mark.parametrize("ratio", [1, 2, 3])
def test_greedy_matching_matches_brute_force(ratio):
    rng = np.random.default_rng(ratio)
    z = (rng.random(300) < 0.4).astype(int)
    logit = rng.normal(size=300) + z
    width = 0.2 * np.std(logit, ddof=1)
    sets = match_on_ps(logit, z, ratio=ratio, caliper=0.2, seed=7)
    np.testing.assert_array_equal(sets, _greedy_reference(logit, z, ratio, width, 7))
    comps = (sets >= 0) & (z == 0)
    assert np.all(np.abs(logit[comps] - logit[sets[comps]]) <= width)
    assert np.bincount(sets[comps]).max() <= ratio


def test_standardized_difference_by_hand():
    X = np.array([[1, 0], [1, 1], [0, 1], [0, 0], [1, 1]], float)
    z = np.array([1, 1, 0, 0, 0])
    d = standardized_differences(X, z)
    p1, p0 = 1.0, 1 / 3
    expected = (p1 - p0) / np.sqrt((p1 * (1 - p1) + p0 * (1 - p0)) / 2)
    assert d["std_diff"].iloc[0] == pytest.approx(expected)
    assert d["mean_comparator"].iloc[1] == pytest.approx(2 / 3)


def test_stratified_balance_averages_within_strata():
    X, z, names = _confounded(n=600)
    s = np.random.default_rng(2).integers(0, 4, size=z.size)
    after = standardized_differences(X, z, stratum_weights(z, s))
    Xd = X.toarray()
    n = np.array([np.sum(s == k) for k in range(4)])
    mean_t = sum(n[k] * Xd[(s == k) & (z == 1)].mean(0) for k in range(4)) / n.sum()
    np.testing.assert_allclose(after["mean_target"], mean_t, rtol=1e-12)


def test_matched_balance_counts_each_set_once():
    z = np.array([1, 0, 0, 1, 0, 0])
    sets = np.array([0, 0, 0, 3, 3, -1])
    np.testing.assert_allclose(matched_weights(z, sets), [1, 0.5, 0.5, 1, 1, 0])
    X, z, names = _confounded()
    ps = fit_propensity(X, z, names, penalty=None)
    sets = match_on_ps(ps.logit, z)
    table = covariate_balance(X, names, z, matched_weights(z, sets))
    kept = sets >= 0
    plain = standardized_differences(X[kept], z[kept])
    row = table.set_index("covariate").loc["c0"]
    assert row["std_diff_after"] == pytest.approx(plain["std_diff"].iloc[0])
    assert abs(row["std_diff_after"]) < abs(row["std_diff_before"])
    assert not table["imbalanced_after"].any() and table["imbalanced_before"].any()
