"""The dense columns' row-major array Z (backends/dense_columns): filled once per fit for an
unpenalised spline basis beside sparse L1 columns, shared by the collinearity check and every
working set of the Gram inner solve, and the fit the same as with a fill at every use."""
import gc
import types

import numpy as np
import pandas as pd
import scipy.sparse as sp

import engine
from engine.data.formula import ModelFormula
from engine.regression.backends import dense_columns, diagonal_step, row_block_parallel


def _spline_cohort():
    """600 rows x 40 sparse binary columns at 5%, and ns(bmi, df=4) of a normal exposure."""
    plain = engine.simulate(600, 40, density=0.05, seed=2)
    bmi = np.random.default_rng(5).normal(27.0, 4.0, plain.n)
    S, names = ModelFormula("ns(bmi, df=4)").build(pd.DataFrame({"bmi": bmi}))
    X = sp.hstack([plain.X, S], format="csc")
    return engine.Cohort.from_arrays(plain.time, plain.event, X, names=plain.names + names), names


class Forgetful(dense_columns.DenseColumns):
    """Fills Z at every use, as before DenseColumns kept it."""

    def __init__(self, *arrays):
        super().__init__(*arrays)
        self.arrays = arrays

    def block(self, cols):
        super().__init__(*self.arrays)
        return super().block(cols)


def _fit_counting_fills(monkeypatch, keep):
    """The L1 fit with the spline unpenalised; the fills of Z and the working sets' blocks
    (``keep`` False: DenseColumns fills Z at every use, as before it kept it)."""
    cohort, names = _spline_cohort()
    fills, blocks = [], []
    fill, split = row_block_parallel.dense_block, row_block_parallel.split_block

    def counted_fill(*args):
        fills.append(args[4].copy())
        return fill(*args)

    def counted_split(*args):
        blocks.append(1)
        return split(*args)

    monkeypatch.setattr(row_block_parallel, "dense_block", counted_fill)
    monkeypatch.setattr(row_block_parallel, "split_block", counted_split)
    if not keep:
        monkeypatch.setattr(diagonal_step, "DenseColumns", Forgetful)
    res = engine.fit(cohort, penalty=engine.L1(4.0), unpenalized=names, tol=1e-12)
    monkeypatch.undo()
    return res, fills, len(blocks), names


def test_the_spline_basis_is_filled_once_and_the_fit_is_unchanged(monkeypatch):
    kept, fills, blocks, names = _fit_counting_fills(monkeypatch, keep=True)
    assert kept.converged and blocks >= 2          # the working set changed at least once
    assert len(fills) == 1                         # the collinearity check's fill served all
    assert list(kept.coef.index[fills[0]]) == names
    refilled, fills, _, _ = _fit_counting_fills(monkeypatch, keep=False)
    assert len(fills) == blocks + 1
    np.testing.assert_array_equal(kept.coef.to_numpy(), refilled.coef.to_numpy())


def test_dense_columns_keeps_the_last_columns_asked_for():
    cohort, _ = _spline_cohort()
    md = engine.Problem.from_cohort(cohort).model.data
    arrays = (md.indptr, md.indices, md.values, md.vptr)
    kept = dense_columns.DenseColumns(*arrays, md.n)
    cols = np.array([40, 42, 43])
    Z = kept.block(cols)
    np.testing.assert_array_equal(Z, row_block_parallel.dense_block(*arrays, cols, md.n))
    np.testing.assert_array_equal(Z, _dense(md, cols))
    assert kept.block(cols.copy()) is Z
    other = kept.block(np.array([41, 40]))
    assert other is not Z
    np.testing.assert_array_equal(other, _dense(md, np.array([41, 40])))


def _row_arrays(obj, n: int) -> list:
    """The 2-d arrays of n rows reachable from ``obj`` through the engine's objects and
    containers (a dense copy of the design's columns, as the fit's Z is)."""
    found, seen, todo = [], set(), [obj]
    while todo:
        x = todo.pop()
        if id(x) in seen or isinstance(x, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(x))
        if isinstance(x, np.ndarray):
            if x.ndim == 2 and x.shape[0] == n:
                found.append(x.shape)
            continue
        if isinstance(x, (dict, list, tuple)) or type(x).__module__.startswith("engine"):
            todo.extend(gc.get_referents(x))
    return found


def test_a_finished_fit_keeps_no_copy_of_its_dense_columns(monkeypatch):
    """The working sets' Z and row blocks are dropped once the fit is done, and again after
    the covariance's information filled Z anew: a kept fit of 10^6 rows x 100 dense columns
    held 0.8 GB of Z for its life."""
    kept, fills, _, names = _fit_counting_fills(monkeypatch, keep=True)
    n = kept.n
    assert len(fills) == 1 and _row_arrays(kept, n) == []
    filled = []
    fill = row_block_parallel.dense_block
    monkeypatch.setattr(row_block_parallel, "dense_block",
                        lambda *a: filled.append(1) or fill(*a))
    assert np.isfinite(kept.se[names]).all()        # the information fills Z once more
    assert filled == [1] and _row_arrays(kept, n) == []
    dense = engine.Cohort.from_arrays(kept.problem.cohort.time, kept.problem.cohort.event,
                                      np.random.default_rng(3).normal(size=(n, 6)))
    res = engine.fit(dense)
    assert np.isfinite(res.se).all() and _row_arrays(res, n) == []


def _dense(md, cols):
    """The columns ``cols`` of the sorted rows as a dense array, from ModelData.block."""
    return sp.csc_matrix(md.block(cols), shape=(md.n, len(cols))).toarray()
