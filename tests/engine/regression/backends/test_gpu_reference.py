"""The GPU backend's algorithms pinned on the CPU (no device needed).

- flag_scan_reference (Yang2024 eq. 18, with the CUDA kernels' tiles and order) against a
  straightforward segmented cumsum, including hypothesis tests;
- cox_gpu_layout + cox_gpu_risk_set (the device log-likelihood pass and information matrix, run here
  with NumPy and SciPy for CuPy) against the Numba kernels of CoxCpuBackend;
- tests/gpu_reference.grad_hess (cuda/coordinate_grad_hess.cu in NumPy) against
  CoxCpuBackend.grad_hess, and its float32 run: the error documented in engine/regression/backends/cox_gpu.py.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import engine
import gpu_reference as ref
from engine.regression import modeldata
from engine.regression.backends.cox_cpu import CoxCpuBackend
from flag_scan_reference import combine, segmented_scan
from engine.regression.backends.cox_gpu_layout import event_groups, layout
from engine.regression.backends.cox_gpu_risk_set import (information_matrix, risk_set_pass,
                                                          score_residuals)

COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


def segmented_cumsum(values, heads):
    """The plain definition: a cumulative sum that restarts at every head."""
    out = np.empty_like(values)
    acc = np.zeros(values.shape[:-1], values.dtype)
    for i in range(values.shape[-1]):
        acc = values[..., i] if heads[i] else acc + values[..., i]
        out[..., i] = acc
    return out


def test_seed_000_example():
    a = np.array([3, 1, 7, 0, 4, 1, 6, 3], float)
    f = np.array([1, 0, 1, 0, 0, 1, 0, 0], bool)
    np.testing.assert_array_equal(segmented_scan(a, f), [3, 4, 7, 7, 11, 1, 7, 10])


@pytest.mark.parametrize("n", [1, 7, 1023, 1024, 1025, 300_000])
@pytest.mark.parametrize("density", [0.0, 0.01, 0.5, 1.0])
def test_scan_equals_segmented_cumsum(n, density):
    rng = np.random.default_rng(n)
    values = rng.integers(-5, 6, size=(3, n)).astype(float)    # integers: exact in any order
    heads = rng.random(n) < density
    np.testing.assert_array_equal(segmented_scan(values, heads), segmented_cumsum(values, heads))
    suffix = segmented_cumsum(values[..., ::-1], heads[::-1])[..., ::-1]
    np.testing.assert_array_equal(segmented_scan(values, heads, reverse=True), suffix)


@given(st.lists(st.tuples(st.booleans(), st.integers(-1000, 1000)), min_size=1, max_size=3000),
       st.sampled_from([(256, 4), (4, 2), (2, 1), (3, 5)]))
def test_scan_hypothesis(pairs, shape):
    heads = np.array([p[0] for p in pairs])
    values = np.array([p[1] for p in pairs], float)
    threads, ipt = shape
    np.testing.assert_array_equal(segmented_scan(values, heads, threads=threads, ipt=ipt),
                                  segmented_cumsum(values, heads))


@given(st.lists(st.tuples(st.booleans(), st.integers(-50, 50)), min_size=3, max_size=3))
def test_operator_is_associative(triple):
    (fa, a), (fb, b), (fc, c) = [(np.bool_(f), np.float64(v)) for f, v in triple]
    left = combine(combine((fa, a), (fb, b)), (fc, c))
    right = combine((fa, a), combine((fb, b), (fc, c)))
    assert left[0] == right[0] and left[1] == right[1]


def _cohorts():
    df = engine.datasets.load_rossi()
    heart = engine.datasets.load_stanford_heart()
    return {
        "rossi": engine.Cohort.from_frame(df, time="week", event="arrest", covariates=COVARIATES),
        "rossi strata": engine.Cohort.from_frame(df, time="week", event="arrest",
                                                 covariates=COVARIATES[:-1], strata="prio"),
        "heart entry": engine.Cohort.from_frame(heart, time="stop", event="event", start="start",
                                                id="id", covariates=["age", "year", "surgery",
                                                                     "transplant"]),
        "heart entry strata": engine.Cohort.from_frame(heart, time="stop", event="event",
                                                       start="start", id="id",
                                                       covariates=["age", "year", "surgery"],
                                                       strata="transplant"),
        "K = N/2": engine.simulate(3000, 20, n_strata=1500, seed=2),
        "ties": engine.Cohort.from_arrays(
            time=np.repeat(np.arange(1, 201), 15).astype(float),
            event=np.random.default_rng(0).integers(0, 2, 3000),
            X=sp.random(3000, 10, density=0.2, format="csc", random_state=1),
            names=[f"x{j}" for j in range(10)]),
    }


COHORTS = _cohorts()


def _numpy_scan(cols, flags, bit, reverse):
    return segmented_scan(cols, (flags & bit) != 0, reverse)


def _backend(name, efron, weighted):
    cohort = COHORTS[name]
    md = modeldata.build(cohort)
    be = CoxCpuBackend(md, efron)
    be.set_beta(np.random.default_rng(1).normal(size=md.p) * 0.1)
    if weighted:
        w = np.random.default_rng(3).integers(0, 3, size=md.n).astype(float)
        be.set_weights(w[md.order])
    return md, be


CASES = [(name, efron, weighted) for name in COHORTS for efron in (False, True)
         for weighted in (False, True)]


@pytest.mark.parametrize("name,efron,weighted", CASES)
def test_device_pass_equals_cpu(name, efron, weighted):
    md, be = _backend(name, efron, weighted)
    lay, groups = layout(md), event_groups(md.flags, md.weights, efron)
    lay.flags = np.where(md.weights > 0, lay.flags, lay.flags & ~np.uint8(1)).astype(np.uint8)
    ll, r, h = be.risk_set_pass(2)
    ll2, r2, h2 = risk_set_pass(np, _numpy_scan, lay, groups, be.state.eta, be.state.D, md.weights,
                                md.flags, be.state.shift, md.start_order, 2)
    assert ll2 == pytest.approx(ll, rel=1e-12)
    np.testing.assert_allclose(r2, r, rtol=1e-11, atol=1e-14 * np.abs(r).max())
    np.testing.assert_allclose(h2, h, rtol=1e-11, atol=1e-14 * np.abs(h).max())

    cols = np.arange(md.p)
    _, _, info = be.information(cols)
    Xs = be.state.sorted_block(cols)
    _, r1, _ = be.risk_set_pass(1)
    info2 = information_matrix(np, _numpy_scan, lay, groups, Xs, r1, be.state.D, md.flags,
                               md.start_order, chunk_bytes=8 * md.n * 3)
    np.testing.assert_allclose(info2, info, rtol=1e-10, atol=1e-12 * np.abs(info).max())


@pytest.mark.parametrize("name,efron,weighted", CASES)
def test_device_score_residuals_equal_cpu(name, efron, weighted):
    """The device's score residuals (array scans), summed by cluster, equal cox_score's Numba
    kernel column by column, and each column's residuals sum to the gradient."""
    md, be = _backend(name, efron, weighted)
    lay, groups = layout(md), event_groups(md.flags, md.weights, efron)
    lay.flags = np.where(md.weights > 0, lay.flags, lay.flags & ~np.uint8(1)).astype(np.uint8)
    cols = np.arange(md.p)
    _, r, _ = be.risk_set_pass(1)
    X = be.state.sorted_block(cols).toarray().T
    U = score_residuals(np, _numpy_scan, lay, groups, X, r, be.state.D, md.weights, md.flags,
                        md.start_order)
    codes = np.random.default_rng(5).integers(0, 7, md.n)
    by_cluster = np.zeros((md.p, 7))
    np.add.at(by_cluster.T, codes, U.T)
    expected = be.cluster_scores(cols, codes, 7)
    np.testing.assert_allclose(by_cluster, expected, rtol=1e-10,
                               atol=1e-12 * np.abs(expected).max())
    _, g = be.loglik_gradient()
    np.testing.assert_allclose(U.sum(axis=1), g, rtol=1e-9, atol=1e-10 * np.abs(g).max())


@pytest.mark.parametrize("name,efron,weighted", CASES)
def test_fused_kernel_reference_equals_cpu(name, efron, weighted):
    md, be = _backend(name, efron, weighted)
    lay = layout(md)
    for j in range(md.p):
        rows, vals = md.column(j)
        x = np.zeros(md.n)
        x[rows] = vals
        g, h = be.grad_hess(j)
        g2, h2 = ref.grad_hess(md, lay, be.state.D, md.flags, x, efron)
        assert g2 == pytest.approx(g, rel=1e-10, abs=1e-12 * h)
        assert h2 == pytest.approx(h, rel=1e-10)


def _float32_error(cohort, efron, beta_scale=0.1):
    md = modeldata.build(cohort)
    be = CoxCpuBackend(md, efron)
    be.set_beta(np.random.default_rng(1).normal(size=md.p) * beta_scale)
    lay = layout(md)
    worst_g = worst_h = 0.0
    for j in range(md.p):
        rows, vals = md.column(j)
        x = np.zeros(md.n)
        x[rows] = vals
        g, h = be.grad_hess(j)
        g32, h32 = ref.grad_hess(md, lay, be.state.D, md.flags, x, efron, dtype=np.float32)
        worst_g = max(worst_g, abs(g32 - g) / max(abs(g), 1e-3 * h))
        worst_h = max(worst_h, abs(h32 - h) / h)
    return worst_g, worst_h


@pytest.mark.parametrize("name", ["rossi", "heart entry", "K = N/2"])
def test_float32_error_small_data(name):
    g, h = _float32_error(COHORTS[name], efron=True)
    print(f"float32, {name}: max rel error g {g:.1e}, h {h:.1e}")
    assert g < 1e-3 and h < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("strata", [1, 50_000])
def test_float32_error_n100000(strata):
    g, h = _float32_error(engine.simulate(100_000, 10, n_strata=strata, seed=4), efron=False)
    print(f"float32, N=100,000, K={strata}: max rel error g {g:.1e}, h {h:.1e}")
    assert g < 1e-3 and h < 1e-4
