"""The GPU's fused z step (latent_pass + latent_sum of engine/bayes/cuda/horseshoe_probit.cu)
against the separate steps it replaces: mu = X beta, the ``latent_z`` kernel (the same Philox
draws), then X'z and z'z by NumPy, and against the CPU's fused pass (latent_pass.py). Shapes
where N is not a multiple of the tile's rows and p not a multiple of the block's threads, grids
of one block and of several (each taking many tiles), and on the emulator every thread order
(a data race would change the numbers).
"""
import itertools
import math

import numpy as np
import pytest

from engine.bayes import gpu, latent_launch
from engine.bayes.chain import run_chain
from engine.bayes.horseshoe_probit import HorseshoeProbit
from engine.bayes.latent_launch import LatentLaunch
from engine.bayes.latent_pass import latent_pass
from engine.bayes.philox import box_muller, uniforms4
from engine.bayes.rng import STEP_Z, ChainStreams
from test_bayes_gpu import device  # noqa: F401  (the fixture: the emulator's Cholesky stand-ins)

SEED, CHAIN, ITERATION = 11, 2, 9


def _problem(n, p, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(dtype)
    beta = rng.normal(scale=0.4, size=p)
    sign = np.where(rng.random(n) < 0.45, 1.0, -1.0)
    return X, beta, sign


def _fused(cp, X, beta, sign, blocks, launch=None):
    """z, X'z, z'z from gpu.LatentStep (latent_pass on ``blocks`` blocks, latent_sum)."""
    step = gpu.LatentStep(cp, cp.asarray(X), cp.asarray(sign), launch, blocks)
    zz = cp.empty(2)
    step(cp.asarray(beta), (np.uint64(SEED), np.uint64(CHAIN)), np.uint64(ITERATION), zz)
    return step.z.get(), step.Xtz.get(), float(zz.get()[0])


def _separate(cp, X, beta, sign):
    """The unfused path: mu = X beta in double, the latent_z kernel, X'z and z'z by NumPy."""
    n = X.shape[0]
    k = gpu._kernels(cp, "double")
    z = cp.empty(n)
    mu = cp.asarray(X.astype(np.float64) @ beta)
    k["latent_z"](gpu._blocks(n), (gpu.THREADS,), (np.int64(n), mu, cp.asarray(sign),
                                                   np.uint64(SEED), np.uint64(CHAIN),
                                                   np.uint64(ITERATION), z))
    z = z.get()
    return z, X.astype(np.float64).T @ z, z @ z


def _assert_same(fused, separate, X):
    z, Xtz, zz = fused
    np.testing.assert_allclose(z, separate[0], rtol=1e-12, atol=1e-14)
    scale = np.abs(X.astype(np.float64)).T @ np.abs(z)        # |X|'|z|: cancellation's bound
    assert np.all(np.abs(Xtz - separate[1]) <= 1e-12 * scale)
    assert zz == pytest.approx(separate[2], rel=1e-12)


@pytest.mark.parametrize("n, p, blocks", [(301, 70, 3), (1003, 5, 4), (307, 300, 1),
                                          (999, 33, 7)])
def test_fused_pass_equals_the_separate_steps(where, n, p, blocks):
    import cupy as cp
    X, beta, sign = _problem(n, p, seed=n + p)
    launch = LatentLaunch.for_columns(p, 8)
    assert n % launch.rows and p % launch.threads         # ragged tiles and columns
    _assert_same(_fused(cp, X, beta, sign, blocks), _separate(cp, X, beta, sign), X)


def _branches(X, beta, sign):
    """Rows on the normal branch (m >= 0.47) and rows whose first Philox block's two proposals
    are both rejected (the draw reads block 1 on), by the sampler's definition."""
    stream = ChainStreams(SEED, CHAIN).at(ITERATION, STEP_Z)
    m = sign * (X.astype(np.float64) @ beta)
    rejected = 0
    for i, mi in enumerate(m):
        u = uniforms4(stream.key, 0, i, stream.iteration, stream.step)
        theta = 0.5 * (-mi + math.sqrt(mi * mi + 4.0))
        accepted = False
        for ua, ub in ((u[0], u[1]), (u[2], u[3])):
            if mi >= 0.47:
                accepted = accepted or box_muller(ua, ub) + mi > 0.0
            else:
                d = -math.log1p(-ua) / theta - mi - theta
                accepted = accepted or ub < math.exp(-0.5 * d * d)
        rejected += not accepted
    return int(np.sum(m >= 0.47)), rejected


def test_fused_pass_equals_the_cpu_pass(where):
    """The same draws as the CPU's one pass over X (latent_pass.py, Numba), float64 and float32
    X (x_i beta, X'z and z'z in double on both), with rows on both branches and rows that
    need a second Philox block."""
    import cupy as cp
    for dtype in (np.float64, np.float32):
        X, beta, sign = _problem(517, 37, seed=4, dtype=dtype)
        normal, rejected = _branches(X, beta, sign)
        assert 0 < normal < 517 and rejected > 0
        z, Xtz = np.empty(517), np.empty(37)
        zz = latent_pass(X, beta, sign, ChainStreams(SEED, CHAIN).at(ITERATION, STEP_Z), z, Xtz)
        _assert_same(_fused(cp, X, beta, sign, 5), (z, Xtz, zz), X)


def test_fused_pass_is_the_same_in_every_thread_order(where):
    """Shared memory (the row sums, the tile's z) is read only across barriers: the emulator's
    forward, reverse and interleaved orders give bit-identical z, X'z and z'z."""
    if where != "emulator":
        pytest.skip("thread orders are the emulator's")
    from cuda_emulator import SCHEDULES, schedule

    import cupy as cp
    X, beta, sign = _problem(389, 67, seed=8)
    results = []
    for name in SCHEDULES:
        with schedule(name):
            z, Xtz, zz = _fused(cp, X, beta, sign, 3)
        results.append(np.concatenate([z, Xtz, [zz]]))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])
    _assert_same((results[0][:389], results[0][389:-1], results[0][-1]),
                 _separate(cp, X, beta, sign), X)


@pytest.mark.parametrize("threads, rows, values", [(128, 4, 32), (64, 16, 64), (32, 8, 4)])
def test_fused_pass_is_the_same_under_other_launches(where, threads, rows, values):
    """The tuning knobs (bench/bayes_latent.py) change the order of the sums, not the numbers:
    several columns a thread, one row a tile, rows x cols beyond the default."""
    import cupy as cp

    X, beta, sign = _problem(403, 150, seed=12)
    launch = LatentLaunch.for_columns(150, 8, threads=threads, rows=rows, held_bytes=8 * values)
    _assert_same(_fused(cp, X, beta, sign, 5, launch), _separate(cp, X, beta, sign), X)


def test_launch_covers_every_column():
    """Each thread's columns j = t + c * threads, c < cols, cover 0..p-1; rows x cols stays
    within HELD_BYTES (one row a tile at least); the register cap fits the blocks in 64K."""
    for p, itemsize in itertools.product((1, 5, 31, 32, 33, 70, 255, 256, 257, 1000, 5000),
                                         (4, 8)):
        launch = LatentLaunch.for_columns(p, itemsize)
        threads, cols, rows = launch.threads, launch.cols, launch.rows
        assert threads % 32 == 0 and threads <= latent_launch.THREADS
        assert (cols - 1) * threads < p <= cols * threads
        assert 1 <= rows <= latent_launch.ROWS
        assert rows * cols * itemsize <= latent_launch.HELD_BYTES or rows == 1
        assert launch.registers * threads * launch.blocks_per_sm <= 65536


def test_bench_times_the_launches_and_finds_one_answer(where, tmp_path):
    """bench/bayes_latent.py: the unfused row, then each launch with z and X'z equal to the
    first launch's (the knobs reorder sums only)."""
    import json

    from bench.bayes_latent import launches, run

    grid = launches(40, 8, threads=(32, 64), rows=(4,), blocks_per_sm=(1, 3))
    assert grid[0] == LatentLaunch.for_columns(40, 8) and len(grid) == 6
    assert [launch.prefetch for launch in grid] == [True, False, True, True, True, True]
    record = run(n=301, p=40, precision="float64", repeats=1, grid=grid, out=str(tmp_path))
    rows = json.loads((tmp_path / "bayes_latent_n301_p40_float64.json").read_text())["rows"]
    assert rows == record["rows"] and rows[0]["launch"].startswith("unfused")
    assert [r["launch"]["threads"] for r in rows[1:]] == [64, 64, 32, 32, 64, 64]
    assert all(r["z_gap"] <= 1e-12 and r["Xtz_rel_gap"] <= 1e-12 for r in rows[1:])
    assert all(r["ms"] > 0 and r["x_read_GB_per_s"] > 0 for r in rows)


def test_gpu_chain_with_several_columns_a_thread_equals_the_cpu_chain(device):
    """run_chain through LatentStep when a thread holds two columns (p = 260 > 256 threads,
    ragged) and the tiles are ragged: the CPU chain to 1e-8."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(405, 260))
    y = (X[:, 0] - 0.5 * X[:, 3] + rng.normal(size=405) > 0).astype(float)
    shrunk = np.ones(260, bool)
    dev = gpu.HorseshoeProbitGpu(X, y, shrunk)
    assert dev.latent.launch.cols == 2 and 405 % dev.latent.launch.rows
    cpu = run_chain(HorseshoeProbit(X, y, shrunk), 0, 3, 6, 2, 1, X.var(0))
    got = dev.run_chain(0, 3, 6, 2, 1, X.var(0))
    for name in ("beta", "tau", "shrinkage"):
        np.testing.assert_allclose(got[name], cpu[name], rtol=1e-8, atol=1e-10)
