"""gwas.scan's progress and cancel hooks, and gwas.summary_statistics' alleles and columns."""
import threading

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import engine
from engine import gwas
from gwas_oracles import random_bed, random_traits, standardized


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("gwas_progress")
    prefix, values = random_bed(path, n=60, m=120, chromosomes=3, seed=5)
    pheno, covar = random_traits(standardized(values), t=3, seed=6)
    return prefix, pheno, covar


def test_progress_counts_every_block_and_changes_no_number(problem):
    prefix, pheno, covar = problem
    kwargs = dict(bed=prefix, pheno=pheno, covar=covar, kinship="loco", memory=200_000)
    seen = []
    res = gwas.scan(progress=lambda k, total: seen.append((k, total)), **kwargs)
    m_block = res.spec["block"][0]
    per_chrom = [40, 40, 40]
    total = sum(-(-m // m_block) for m in per_chrom)
    assert m_block < 40 and seen[0] == (0, total) and seen[-1] == (total, total)
    assert sorted(set(k for k, _ in seen)) == list(range(total + 1))
    pd.testing.assert_frame_equal(res.frame, gwas.scan(**kwargs).frame, check_exact=True)


def test_cancel_stops_between_blocks(problem):
    prefix, pheno, covar = problem
    cancel = threading.Event()
    blocks = []

    def progress(k, total):
        blocks.append(k)
        if k == 1:
            cancel.set()

    with pytest.raises(engine.Cancelled, match="after 1 of"):
        gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all", memory=200_000,
                  progress=progress, cancel=cancel)
    assert max(blocks) == 1


@pytest.mark.parametrize("count_A1", [False, True])
def test_summary_statistics_alleles_and_definitions(problem, count_A1):
    prefix, pheno, covar = problem
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all", count_A1=count_A1)
    out = gwas.summary_statistics(res)
    bim = pd.read_csv(prefix + ".bim", sep=r"\s+", header=None,
                      names=["chrom", "sid", "cm", "pos", "a1", "a2"], dtype=str)
    bim = bim.set_index("sid").loc[out.ID]
    counted, other = ("a1", "a2") if count_A1 else ("a2", "a1")
    assert (out.ALLELE1.to_numpy() == bim[counted].to_numpy()).all()
    assert (out.ALLELE0.to_numpy() == bim[other].to_numpy()).all()
    dof = 60 - 2 - 1 - 1                   # n - covariates - intercept - SNP
    assert res.spec["dof"] == dof
    t = out.BETA / out.SE
    np.testing.assert_allclose(out.T_STAT, t, rtol=1e-14)
    np.testing.assert_allclose(out.P, 2 * stats.t.sf(np.abs(t), dof), rtol=1e-9)
    np.testing.assert_allclose(out.LOG10P, -np.log10(out.P), rtol=1e-9)
    assert (out.N == 60).all() and list(out.PHENO.unique()) == ["y0", "y1", "y2"]


def test_fused_cpu_finish_equals_the_array_formulas():
    """gls_kernels.finish (the CPU's one pass) = gls.association's formulas and scipy's F tail,
    for ordinary, untestable (S_BR = 0) and beyond-the-table (|t| > 40) pairs."""
    from scipy import special

    from engine.gwas import gls, gls_kernels

    rng = np.random.default_rng(0)
    t, m, dof = 7, 300, 57
    sKs = rng.uniform(0.5, 2.0, (t, m))
    sKs[:, :3] = 0.0
    yKy = rng.uniform(50.0, 80.0, t)
    sKy = rng.uniform(-1.0, 1.0, (t, m)) * np.sqrt(sKs * yKy[:, None])
    sKy[:, 3] = 0.999999999 * np.sqrt(sKs[:, 3] * yKy)      # r2 near 0: F beyond the table
    beta, se, p = (np.empty((t, m)) for _ in range(3))
    beyond = gls_kernels.finish(sKs, sKy, yKy, float(dof), *gls.pass_table(dof), beta, se, p)
    assert np.isnan(p).sum() == beyond >= t
    gls.p_value_beyond(beta, se, p, dof)
    tested = sKs > 0
    safe = np.where(tested, sKs, 1.0)
    want_beta = np.where(tested, sKy / safe, 0.0)
    var = np.where(tested, (yKy[:, None] - sKy * want_beta) / dof / safe, np.inf)
    np.testing.assert_allclose(beta, want_beta, rtol=1e-14)
    np.testing.assert_allclose(se, np.sqrt(var), rtol=1e-14)
    F = want_beta ** 2 / var
    np.testing.assert_allclose(p, special.fdtrc(1.0, dof, F), rtol=1e-10)
    assert (p[:, :3] == 1.0).all() and (p[:, 3] < 1e-200).all()
