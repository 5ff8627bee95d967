"""engine.grid_cost_of_shape: the estimate sensitivity_study makes, from the cohort's shape
alone (the app shows it before building the cohort); check_budget refuses over a limit."""

from __future__ import annotations

import numpy as np
import pytest

import engine


def test_the_estimate_from_the_shape_is_the_study_s():
    rng = np.random.default_rng(3)
    n = 400
    X = np.column_stack([rng.integers(0, 2, n), rng.normal(size=n), rng.integers(0, 2, n)])
    cohort = engine.Cohort.from_arrays(rng.exponential(1, n), rng.integers(0, 2, n), X,
                                       names=["treat", "a", "b"])
    vary = {"cut_points": [None, {"treat": [0.5, 1.0]}], "follow_up": [None, 1.5],
            "strata": {"none": None, "by b": X[:, 2]}, "penalty": [None, engine.L2(1.0)]}
    res = engine.sensitivity_study(cohort, "treat", vary=vary)
    shape = engine.grid_cost_of_shape(n, 3, cohort.X.nnz, n_variants=16, n_layouts=4,
                                      n_cut=2 + 1)
    assert shape == res.cost
    with pytest.raises(TimeoutError, match="max_seconds"):
        engine.check_budget(shape, max_seconds=shape["seconds"] / 2)
    with pytest.raises(MemoryError, match="max_memory"):
        engine.check_budget(shape, max_memory=shape["bytes"] / 2)
    engine.check_budget(shape, max_memory=shape["bytes"], max_seconds=shape["seconds"])
    # two threads share one layout: half the time, the memory of one fit and two row states
    threads = engine.grid_cost_of_shape(n, 3, cohort.X.nnz, n_variants=16, n_layouts=4,
                                        n_cut=3, parallel="threads", n_jobs=2)
    assert threads == engine.sensitivity_study(cohort, "treat", vary=vary, parallel="threads",
                                               n_jobs=2).cost
    assert threads["seconds"] == pytest.approx(shape["seconds"] / 2)
    assert shape["bytes"] < threads["bytes"] < 1.5 * shape["bytes"]
    processes = engine.grid_cost_of_shape(n, 3, cohort.X.nnz, n_variants=16, n_layouts=4,
                                          n_cut=3, parallel="processes", n_jobs=2)
    assert processes["bytes"] == 2 * shape["bytes"]
