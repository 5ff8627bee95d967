"""The GWAS kernels run on threads over parts of the traits (engine/gwas/parts.py) give
the one-thread loop's numbers bit for bit."""
import numpy as np
import pytest

from engine.gwas import gls, gls_kernels, parts, summaries_kernels


@pytest.mark.parametrize("cores", [2, 4])
def test_fused_pass_in_parts_equals_one_thread(monkeypatch, cores):
    monkeypatch.setattr(parts, "CORES", cores)
    rng = np.random.default_rng(5)
    t, m, dof = 300, 53, 60
    sKs = rng.uniform(0.5, 2.0, (t, m))
    sKy = rng.normal(size=(t, m))
    yKy = (sKy ** 2 / sKs).max(axis=1) * 1.5
    sKs[3, :4] = 0.0                                  # SNPs with no variation left
    sKy[100, 7] = np.sqrt(yKy[100] * sKs[100, 7]) * (1 - 1e-9)   # F beyond the table: NaN
    sKy[5, 8] = np.sqrt(yKy[5] * sKs[5, 8]) * (1 - 1e-9)
    one, two = [np.empty((t, m)) for _ in range(3)], [np.empty((t, m)) for _ in range(3)]
    table = gls.pass_table(dof)
    whole = gls_kernels.finish(sKs, sKy, yKy, float(dof), *table, *one)
    split = parts.run(gls_kernels.finish, t, lambda rows: (
        sKs[rows], sKy[rows], yKy[rows], float(dof), *table, *(a[rows] for a in two)))
    assert len(split) == cores and sum(split) == whole == 2
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(one[2][100, 7]) and (one[1][3, :4] == np.inf).all()


@pytest.mark.parametrize("cores", [2, 3])
def test_tally_in_parts_equals_one_thread(monkeypatch, cores):
    monkeypatch.setattr(parts, "CORES", cores)
    rng = np.random.default_rng(6)
    t, m, top, bins = 200, 200, 5, 64
    p = rng.choice(rng.uniform(size=40), size=(t, m))          # many ties
    p[2, 10] = np.nan
    beta, se = rng.normal(size=(t, m)), rng.uniform(size=(t, m))
    rows = np.arange(100, 100 + m, dtype=np.int64)

    def state():
        return [np.zeros((t, bins), dtype=np.int64), np.zeros(t, dtype=np.int64),
                np.full((t, top), np.inf), np.zeros((t, top), dtype=np.int64),
                np.zeros((t, top)), np.zeros((t, top)), np.zeros(t, dtype=np.int64)]
    one, two = state(), state()
    for half in (slice(0, 120), slice(120, m)):                 # two blocks
        summaries_kernels.tally(p[:, half], beta[:, half], se[:, half], rows[half], 0.2, *one)
        parts.run(summaries_kernels.tally, t, lambda r: (
            p[r, half], beta[r, half], se[r, half], rows[half], 0.2, *(a[r] for a in two)))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    assert one[0].sum() == t * m - 1
