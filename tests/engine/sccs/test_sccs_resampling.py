"""Cross-validation and the bootstrap on SCCS eras: folds and resamples are whole cases, and
every fold score and replicate equals a fit on the subset (or the duplicated cases) built
explicitly, scored by a brute-force conditional likelihood."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.regression.drivers.resampling import bootstrap_counts, fold_of_rows, subjects
from sccs_oracles import brute_loglik, simulated


def sccs_of(case, length, y, X):
    return engine.SccsData.from_arrays(case=case, length=length, events=y, X=X,
                                       names=[f"d{j}" for j in range(X.shape[1])])


def test_cross_validation_folds_are_cases_and_scores_are_held_out_likelihoods():
    case, length, y, X = simulated(11, n_cases=60, p=6)
    sccs = sccs_of(case, length, y, X)
    grid = [6.0, 2.0]
    cv = engine.cross_validate(sccs, model="sccs", penalty="l1", folds=3, grid=grid, seed=4,
                               tol=1e-10)
    fold = fold_of_rows(sccs, 3, 4, 0)
    assert all(np.unique(fold[case == c]).size == 1 for c in np.unique(case))
    for k in range(3):
        train = fold != k
        for row, lam in enumerate(grid):
            sub = engine.fit(sccs_of(case[train], length[train], y[train], X[train]),
                             model="sccs", penalty=engine.L1(lam), tol=1e-12)
            b = sub.coef.to_numpy()
            held = ~train
            score = brute_loglik(case[held], length[held], y[held], X[held], b)
            assert cv.curve.loc[row, f"r0_f{k}"] == pytest.approx(score, rel=1e-6, abs=1e-6)
    assert cv.penalty.lam in grid
    assert cv.fit.spec["model"] == "sccs"


def test_bootstrap_replicates_are_fits_on_resampled_cases():
    case, length, y, X = simulated(12, n_cases=40, p=4)
    sccs = sccs_of(case, length, y, X)
    boot = engine.bootstrap(sccs, model="sccs", penalty=engine.L1(3.0), replicates=3, seed=7,
                            tol=1e-10)
    codes, n_cases = subjects(sccs)
    for b in range(3):
        counts = bootstrap_counts(n_cases, 7, b)
        parts = []
        for c in range(n_cases):                    # each drawn case copied under a new id
            at = np.flatnonzero(codes == c)
            for copy in range(counts[c]):
                parts.append((np.full(at.size, c * 1000 + copy), at))
        ids = np.concatenate([p[0] for p in parts])
        rows = np.concatenate([p[1] for p in parts])
        ref = engine.fit(sccs_of(ids, length[rows], y[rows], X[rows]), model="sccs",
                         penalty=engine.L1(3.0), tol=1e-12)
        np.testing.assert_allclose(boot.replicates.iloc[b].to_numpy(), ref.coef.to_numpy(),
                                   rtol=1e-6, atol=1e-7)
    expected = (boot.replicates != 0).mean(axis=0)
    pd.testing.assert_series_equal(boot.summary["nonzero_fraction"], expected,
                                   check_names=False)
