"""The GWAS kernels that run traits in parallel (Numba prange) give the serial loop's numbers
bit for bit: each compared with its own pure-Python body (``py_func``, one thread)."""
import numpy as np

from engine.gwas import gls, gls_kernels, summaries_kernels


def test_parallel_fused_pass_equals_the_serial_loop():
    rng = np.random.default_rng(5)
    t, m, dof = 37, 53, 60
    sKs = rng.uniform(0.5, 2.0, (t, m))
    sKy = rng.normal(size=(t, m))
    yKy = (sKy ** 2 / sKs).max(axis=1) * 1.5
    sKs[3, :4] = 0.0                                  # SNPs with no variation left
    sKy[5, 7] = np.sqrt(yKy[5] * sKs[5, 7]) * (1 - 1e-9)   # F far beyond the table: NaN
    out = [np.empty((t, m)) for _ in range(6)]
    table = gls.tail_table(dof)
    beyond = gls_kernels.finish(sKs, sKy, yKy, float(dof), *table, *out[:3])
    serial = gls_kernels.finish.py_func(sKs, sKy, yKy, float(dof), *table, *out[3:])
    assert beyond == serial == 1
    for a, b in zip(out[:3], out[3:]):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(out[2][5, 7]) and (out[1][3, :4] == np.inf).all()


def test_parallel_tally_equals_the_serial_loop():
    rng = np.random.default_rng(6)
    t, m, top, bins = 23, 200, 5, 64
    p = rng.choice(rng.uniform(size=40), size=(t, m))          # many ties
    p[2, 10] = np.nan
    beta, se = rng.normal(size=(t, m)), rng.uniform(size=(t, m))
    rows = np.arange(100, 100 + m, dtype=np.int64)

    def state():
        return [np.zeros((t, bins), dtype=np.int64), np.zeros(t, dtype=np.int64),
                np.full((t, top), np.inf), np.zeros((t, top), dtype=np.int64),
                np.zeros((t, top)), np.zeros((t, top)), np.zeros(t, dtype=np.int64)]
    parallel, serial = state(), state()
    for half in (slice(0, 120), slice(120, m)):                 # two blocks
        summaries_kernels.tally(p[:, half], beta[:, half], se[:, half], rows[half], 0.2,
                                *parallel)
        summaries_kernels.tally.py_func(p[:, half], beta[:, half], se[:, half], rows[half], 0.2,
                                        *serial)
    for a, b in zip(parallel, serial):
        np.testing.assert_array_equal(a, b)
    assert parallel[0].sum() == t * m - 1
