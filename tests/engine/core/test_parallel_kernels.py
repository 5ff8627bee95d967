"""The parallel kernels (Numba prange) give their serial twins' numbers exactly, whatever the
thread count, and their definitions' to rounding; fits may run from several threads
at once (the app's worker threads)."""
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine.regression import modeldata
from engine.core import numba_layer
from engine.regression.backends import linear_predictor, row_block_parallel

needs_parallel = pytest.mark.skipif(not numba_layer.threadsafe(),
                                    reason="Numba has no thread-safe threading layer here: "
                                           "the parallel kernels never run")


@pytest.fixture(scope="module")
def layout():
    """A sorted layout of 40,001 rows (two full row pieces of the block build and a ragged
    last one) with binary and valued columns, the last one sparse."""
    rng = np.random.default_rng(7)
    n, p = 40_001, 60
    X = sp.random(n, p, density=0.02, random_state=3, format="csc")
    X.data = np.round(X.data * 4) + 1.0
    X.data[np.repeat(np.arange(p) % 2 == 0, np.diff(X.indptr))] = 1.0     # even columns binary
    X = sp.hstack([X, sp.random(n, 1, density=2e-4, random_state=4) * 3], format="csc")
    cohort = engine.Cohort.from_arrays(time=rng.permutation(n) + 1.0,
                                       event=rng.random(n) < 0.5, X=X)
    md = modeldata.build(cohort)
    assert md.vptr[0] == -1 and md.vptr[1] >= 0
    Xs = sp.csr_matrix(X)[md.order].tocsc()
    return md.indptr, md.indices, md.values, md.vptr, n, Xs, rng


@needs_parallel
@pytest.mark.parametrize("threads", [1, 2])
def test_block_kernels_equal_the_serial_ones(layout, threads, monkeypatch):
    indptr, indices, values, vptr, n, Xs, rng = layout
    coords = np.array([0, 1, 3, 5, 17, 22, 41, 59, 60], np.int64)
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: True)  # any load
    monkeypatch.setattr(row_block_parallel, "_PARALLEL_ROWS", 0)       # whatever the size
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        block = row_block_parallel.row_block(indptr, indices, values, vptr, coords, n)
        h = rng.random(n)
        Q = row_block_parallel.gram_matrix(*block, coords.size, h)
        x = rng.standard_normal(coords.size)
        u = row_block_parallel.block_image(*block, x)
        v = rng.standard_normal(n)
        g = linear_predictor.column_dots_on(indptr, indices, values, vptr, v, coords)
        gb = row_block_parallel.block_dots(*block, coords.size, v)
    finally:
        numba.set_num_threads(before)
    reference = sp.csr_matrix(Xs[:, coords])         # the block's definition: CSR rows
    reference.sort_indices()
    for a, b in zip(block, (reference.indptr, reference.indices, reference.data)):
        np.testing.assert_array_equal(a, b)
    dense = Xs[:, coords].toarray()                 # the definitions, rows in sorted order
    centred = dense - h @ dense / h.sum()
    expected = centred.T @ (h[:, None] * centred)
    np.testing.assert_allclose(Q, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(u, dense @ x, rtol=1e-12, atol=1e-12 * np.abs(u).max())
    np.testing.assert_allclose(gb, dense.T @ v, rtol=1e-12, atol=1e-12 * np.abs(gb).max())
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: False)  # serial
    for a, b in zip(block, row_block_parallel.row_block(indptr, indices, values, vptr, coords, n)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(Q, row_block_parallel.gram_matrix(*block, coords.size, h))
    np.testing.assert_array_equal(u, row_block_parallel.block_image(*block, x))
    np.testing.assert_array_equal(gb, row_block_parallel.block_dots(*block, coords.size, v))
    np.testing.assert_array_equal(
        g, linear_predictor.column_dots_on(indptr, indices, values, vptr, v, coords))


@pytest.mark.parametrize("parallel", [False, True])
def test_a_binary_block_keeps_no_values_and_gives_the_same_numbers(layout, parallel,
                                                                   monkeypatch):
    """Every chosen column binary: rv is empty and the kernels (serial and parallel twins) give
    exactly what they give on the block with its values of 1.0, and the dense products."""
    indptr, indices, values, vptr, n, Xs, rng = layout
    coords = np.array([0, 2, 8, 30, 58], np.int64)
    assert np.all(vptr[coords] < 0)
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: parallel)
    monkeypatch.setattr(row_block_parallel, "_PARALLEL_ROWS", 0)
    rp, rc, rv = row_block_parallel.row_block(indptr, indices, values, vptr, coords, n)
    assert rv.size == 0 and rp[-1] > 0
    ones = np.ones(rc.size)
    B = Xs[:, coords].toarray()
    np.testing.assert_array_equal(sp.csr_matrix((ones, rc, rp), shape=B.shape).toarray(), B)
    h, x, v = rng.random(n), rng.standard_normal(coords.size), rng.standard_normal(n)
    for binary, valued in [
            (row_block_parallel.gram_matrix(rp, rc, rv, coords.size, h),
             row_block_parallel.gram_matrix(rp, rc, ones, coords.size, h)),
            (row_block_parallel.block_image(rp, rc, rv, x),
             row_block_parallel.block_image(rp, rc, ones, x)),
            (row_block_parallel.block_dots(rp, rc, rv, coords.size, v),
             row_block_parallel.block_dots(rp, rc, ones, coords.size, v))]:
        np.testing.assert_array_equal(binary, valued)
    Bc = B - h @ B / h.sum()
    np.testing.assert_allclose(row_block_parallel.gram_matrix(rp, rc, rv, coords.size, h),
                               Bc.T @ (h[:, None] * Bc), rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(row_block_parallel.block_image(rp, rc, rv, x), B @ x, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(row_block_parallel.block_dots(rp, rc, rv, coords.size, v), B.T @ v,
                               rtol=1e-12, atol=1e-9)


def test_block_kernels_equal_their_dense_definitions(layout):
    """Against the dense products of the sorted design (independent of every kernel)."""
    indptr, indices, values, vptr, n, Xs, rng = layout
    coords = np.array([2, 3, 33, 40, 60], np.int64)
    B = Xs[:, coords].toarray()
    rp, rc, rv = row_block_parallel.row_block(indptr, indices, values, vptr, coords, n)
    np.testing.assert_array_equal(sp.csr_matrix((rv, rc, rp), shape=B.shape).toarray(), B)
    h = rng.random(n)
    mu = h @ B / h.sum()
    Bc = B - mu
    np.testing.assert_allclose(row_block_parallel.gram_matrix(rp, rc, rv, coords.size, h),
                               Bc.T @ (h[:, None] * Bc), rtol=1e-10, atol=1e-8)
    x = rng.standard_normal(coords.size)
    np.testing.assert_allclose(row_block_parallel.block_image(rp, rc, rv, x), B @ x, rtol=1e-12,
                               atol=1e-12)
    v = rng.standard_normal(n)
    np.testing.assert_allclose(row_block_parallel.block_dots(rp, rc, rv, coords.size, v), B.T @ v,
                               rtol=1e-12, atol=1e-9)
    g = linear_predictor.column_dots(indptr, indices, values, vptr, v)
    np.testing.assert_allclose(g, Xs.T @ v, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("d, valued", [(3, False), (3, True), (10, False)])
def test_dense_columns_join_the_block_as_rows_of_z(layout, parallel, d, valued, monkeypatch):
    """The dense columns of a working set (a spline basis, age) as the n x d array Z after the
    sparse ones: split by their fill, and the Gram matrix, X'v and X x over [sparse, Z] equal
    their dense definitions; the serial and parallel twins give the same numbers exactly.
    Binary and valued sparse parts (the cross products by row or by entry), a Z of 3 and of 10
    columns."""
    indptr, indices, values, vptr, n, Xs, rng = layout
    fill = np.resize([1.0, 0.9, 0.7], d)
    Zs = rng.normal(27.0, 4.0, (n, d)) * (rng.random((n, d)) < fill)
    Zs[:, 0] = 1.0                                          # a binary dense column
    C = sp.hstack([Xs, sp.csc_matrix(Zs)], format="csc")
    C.sort_indices()
    binary = np.append(vptr < 0, np.arange(d) == 0)
    vptr = np.full(C.shape[1], -1, np.int64)               # values of the valued columns only
    runs = []
    for j in np.flatnonzero(~binary):
        vptr[j] = sum(r.size for r in runs)
        runs.append(C.data[C.indptr[j]:C.indptr[j + 1]])
    arrays = (C.indptr.astype(np.int64), C.indices.astype(np.int64), np.concatenate(runs), vptr)
    first = 1 if valued else 0                              # odd columns of the layout: valued
    coords = np.array([first, 2, 8, *range(61, 61 + d), 30], np.int64)
    sparse, dense = row_block_parallel.split_dense(arrays[0], coords, n)
    np.testing.assert_array_equal(sparse, [first, 2, 8, 30])
    np.testing.assert_array_equal(dense, np.arange(61, 61 + d))   # in 100%, 90%, 70% of rows
    Z = row_block_parallel.dense_block(*arrays, dense, n)
    np.testing.assert_array_equal(Z, Zs)
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: parallel)
    monkeypatch.setattr(row_block_parallel, "_PARALLEL_ROWS", 0)
    rp, rc, rv = row_block_parallel.row_block(*arrays, sparse, n)
    assert (rv.size > 0) == valued                          # a binary sparse part: no values
    B = np.hstack([Xs[:, sparse].toarray(), Zs])
    h, x, v = rng.random(n), rng.standard_normal(B.shape[1]), rng.standard_normal(n)
    Bc = B - h @ B / h.sum()
    Q = row_block_parallel.gram_matrix(rp, rc, rv, sparse.size, h, Z)
    np.testing.assert_allclose(Q, Bc.T @ (h[:, None] * Bc), rtol=1e-10,
                               atol=1e-12 * np.abs(Q).max())
    u = row_block_parallel.block_image(rp, rc, rv, x, Z)
    np.testing.assert_allclose(u, B @ x, rtol=1e-12, atol=1e-12 * np.abs(u).max())
    g = row_block_parallel.block_dots(rp, rc, rv, sparse.size, v, Z)
    np.testing.assert_allclose(g, B.T @ v, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    monkeypatch.setattr(numba_layer, "parallel_ok", lambda *work, **least: not parallel)
    np.testing.assert_array_equal(Q, row_block_parallel.gram_matrix(rp, rc, rv, sparse.size,
                                                                     h, Z))
    np.testing.assert_array_equal(u, row_block_parallel.block_image(rp, rc, rv, x, Z))
    np.testing.assert_array_equal(g, row_block_parallel.block_dots(rp, rc, rv, sparse.size,
                                                                   v, Z))


@pytest.mark.parametrize("parallel", [True, False])
def test_fits_from_two_threads_at_once_equal_a_lone_fit(parallel, monkeypatch):
    """Two threads fitting together (the app's worker threads): no abort, the same numbers as
    a fit alone, and the same with one Numba thread and with the serial kernels."""
    monkeypatch.setattr(numba_layer, "parallel_ok",
                        lambda *work, **least: parallel and numba_layer.threadsafe())
    cohort = engine.simulate(40_000, 50, density=0.03, seed=5)
    penalty = engine.L1(70.0)
    alone = engine.fit(cohort, penalty=penalty, tol=1e-10)
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda _: engine.fit(cohort, penalty=penalty, tol=1e-10),
                                 range(2)))
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one_thread = engine.fit(cohort, penalty=penalty, tol=1e-10)
    finally:
        numba.set_num_threads(before)
    assert 0 < np.count_nonzero(alone.beta) < 50
    for res in together + [one_thread]:
        np.testing.assert_array_equal(res.beta, alone.beta)


@pytest.mark.parametrize("efron", [False, True])
def test_fused_risk_set_pass_equals_the_two_suffix_scans(efron):
    """Without entry times r and h come from one fused backward pass; with entry times all
    before every stop the same risk sets go through the two suffix scans (_risk_sums): the
    same numbers exactly (day-resolution ties, 3 strata, case weights)."""
    from engine.regression.backends import cox_kernels

    rng = np.random.default_rng(11)
    n = 5000
    cohort = engine.Cohort.from_arrays(time=rng.integers(1, 60, n).astype(float),
                                       event=rng.random(n) < 0.6,
                                       X=sp.random(n, 3, density=0.5, random_state=1),
                                       strata=rng.integers(0, 3, n),
                                       weights=rng.integers(1, 4, n).astype(float))
    md = modeldata.build(cohort)
    eta = rng.standard_normal(n) * 0.3
    D = md.weights * np.exp(eta - eta.max())
    start = np.full(n, -1.0)
    order = np.arange(n, dtype=np.int64)
    fused = cox_kernels.risk_set_pass(eta, D, md.weights, md.flags, efron, eta.max(), False,
                                      md.stop, np.zeros(0), np.zeros(0, np.int64),
                                      md.strata_bounds, 2, np.empty((4, n)))
    scans = cox_kernels.risk_set_pass(eta, D, md.weights, md.flags, efron, eta.max(), True,
                                      md.stop, start, order, md.strata_bounds, 2,
                                      np.full((4, n), np.nan))
    assert fused[0] == scans[0]
    np.testing.assert_array_equal(fused[1], scans[1])
    np.testing.assert_array_equal(fused[2], scans[2])


@pytest.mark.parametrize("load, running, idle", [(0.2, 1, True), (1.4, 1, True), (1.6, 1, False),
                                                  (9.0, 1, False), (0.2, 3, False),
                                                  (0.2, 0, True)])
def test_a_second_thread_runs_only_while_a_core_is_idle(monkeypatch, load, running, idle):
    """engine.core.parallel.core_idle, the rule of every optional second thread: on two cores, a
    1-minute load average below 1.5 and at most one task running now (this one; 0: the
    platform does not say) leave one free."""
    from engine.core import parallel

    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(parallel, "_running", lambda: running)
    assert parallel.core_idle() is idle
    if numba_layer.threadsafe() and numba.get_num_threads() >= 2:
        assert numba_layer.parallel_ok(numba_layer.PARALLEL_WORK) is idle
