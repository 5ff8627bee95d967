"""The sorted layout: rows by stratum then time descending, columns re-indexed to positions."""
import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine.regression import modeldata
from engine.core import numba_layer
from engine.regression.modeldata import EVENT, GROUP_END, HEAD, _sorted_columns


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("n, density", [(1, 0.3), (50, 0.3), (4096, 0.3), (10_001, 0.3),
                                        (10_001, 0.002), (70_000, 0.01), (4096, 0.6),
                                        (10_001, 0.97)])
def test_sorted_columns_equal_scipy_row_permutation(n, density, parallel, monkeypatch):
    """Both builds (parallel over column chunks, and the serial one used where Numba has no
    thread-safe threading layer) give scipy's row permutation, for columns read back from a
    bitmap (density 1/256 and more) and columns sorted (sparser), valued ones among them
    stored in most rows (a spline basis, age)."""
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: parallel)
    rng = np.random.default_rng(n)
    p = 20
    dense = sp.random(n, p, density=density, random_state=n).toarray()
    dense = np.where(dense != 0, np.round(dense * 3) + 1.0, 0.0)
    dense[:, ::3] = dense[:, ::3] != 0                   # columns 0, 3, 6, ... are binary
    X = sp.csc_matrix(dense)
    binary = np.array([set(np.unique(X[:, j].data)) <= {1.0} for j in range(p)])
    order = rng.permutation(n)
    indptr, indices, values, vptr = _sorted_columns(X, order, binary)
    ref = sp.csr_matrix(X)[order].tocsc()
    ref.sort_indices()
    np.testing.assert_array_equal(indptr, ref.indptr)
    np.testing.assert_array_equal(indices, ref.indices)
    for j in range(p):
        seg = ref.data[ref.indptr[j]:ref.indptr[j + 1]]
        if binary[j]:
            assert vptr[j] == -1 and np.all(seg == 1.0)
        else:
            np.testing.assert_array_equal(values[vptr[j]:vptr[j] + seg.size], seg)


def test_builds_from_several_threads_at_once(monkeypatch):
    """App sessions build their cohorts concurrently: the parallel build must neither abort
    (Numba's workqueue layer would) nor mix the threads' outputs."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(numba_layer, "parallel_ok",      # whatever the load and the size
                        lambda *work, **least: numba_layer.threadsafe())

    import engine
    cohorts = [engine.simulate(30_000, 40, seed=s) for s in range(4)]
    serial = [modeldata.build(c) for c in cohorts]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(modeldata.build, cohorts))
    for a, b in zip(serial, together):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.values, b.values)


def test_flags_mark_strata_heads_tie_blocks_and_events():
    import engine

    coh = engine.Cohort.from_arrays(time=[3.0, 1.0, 3.0, 2.0, 5.0], event=[1, 0, 1, 1, 0],
                                    X=np.array([[1.0], [0.0], [2.0], [1.0], [0.0]]),
                                    strata=[0, 0, 0, 1, 1])
    md = engine.regression.modeldata.build(coh)
    np.testing.assert_array_equal(md.stop, [3.0, 3.0, 1.0, 5.0, 2.0])
    np.testing.assert_array_equal(md.flags & HEAD > 0, [1, 0, 0, 1, 0])
    np.testing.assert_array_equal(md.flags & GROUP_END > 0, [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(md.flags & EVENT > 0, [1, 1, 0, 0, 1])
    np.testing.assert_array_equal(md.strata_bounds, [0, 3, 5])


def test_block_gathers_the_columns_as_column_by_column():
    """The vectorised block() equals stacking column(j): binary columns (implicit ones) and
    valued ones, in any order, repeated, and none."""
    df = engine.datasets.load_rossi()
    md = modeldata.build(engine.Cohort.from_frame(
        df, time="week", event="arrest", covariates=["fin", "age", "race", "wexp", "prio"]))
    assert (md.vptr < 0).any() and (md.vptr >= 0).any()
    for cols in ([0, 1, 2, 3, 4], [4, 0, 1, 1], []):
        parts = [md.column(j) for j in cols]
        vals, rows, ptr = md.block(np.array(cols, np.int64))
        np.testing.assert_array_equal(ptr, np.cumsum([0] + [r.size for r, _ in parts]))
        np.testing.assert_array_equal(rows, np.concatenate([r for r, _ in parts] + [[]]))
        np.testing.assert_array_equal(vals, np.concatenate([v for _, v in parts] + [[]]))
