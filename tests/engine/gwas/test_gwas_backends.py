"""simulate_traits, and the Dask and CuPy backends of gwas.scan against the CPU."""
import numpy as np
import pandas as pd
import pytest

from engine import CohortError, gwas
from gwas_oracles import DATA, random_bed, random_traits, standardized

TOY = DATA / "toydata"


def test_simulated_traits_have_the_asked_heritability():
    traits = gwas.simulate_traits(TOY / "toydata.5chrom", t=300, h2=0.4, causal=5, seed=1)
    assert traits.shape == (500, 302) and list(traits.columns[:3]) == ["FID", "IID", "trait_0"]
    assert traits.attrs["causal"].shape == (300, 5)
    # independent check: OLS R^2 of each trait on its own causal SNPs (numpy lstsq)
    g = gwas.Genotypes.open(TOY / "toydata.5chrom")
    r2 = []
    for j in range(300):
        X = np.column_stack([np.ones(500), g.select(traits.attrs["causal"][j]).read()])
        y = traits[f"trait_{j}"].to_numpy()
        resid = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
        r2.append(1 - resid.var() / y.var())
    # E[R^2] = h2 + (1 - h2) k / (n - 1) up to sampling noise of the mean over 300 traits
    assert np.mean(r2) == pytest.approx(0.4 + 0.6 * 5 / 499, abs=0.01)
    again = gwas.simulate_traits(TOY / "toydata.5chrom", t=300, h2=0.4, causal=5, seed=1)
    pd.testing.assert_frame_equal(traits, again)


def test_simulated_traits_from_an_array_with_shared_causal_snps():
    values = np.random.default_rng(2).binomial(2, 0.3, size=(200, 50)).astype(float)
    traits = gwas.simulate_traits(values, t=4, h2=[0.0, 0.3, 0.6, 1.0], causal=[3, 7], seed=3)
    X = standardized(values[:, [3, 7]])
    beta = traits.attrs["beta"]
    g = X @ beta[3]
    np.testing.assert_allclose(traits["trait_3"], g / g.std(), rtol=1e-12)
    with pytest.raises(CohortError, match=r"lie in \[0, 1\]"):
        gwas.simulate_traits(values, t=2, h2=1.5)
    with pytest.raises(CohortError, match="causal SNPs asked"):
        gwas.simulate_traits(values, t=2, causal=60)


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("gwas_backends")
    prefix, values = random_bed(path, n=70, m=90, chromosomes=2, seed=21)
    pheno, covar = random_traits(standardized(values), t=3, seed=22)
    cpu = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", memory=260_000)
    return prefix, pheno, covar, cpu


def test_gpu_backend_in_the_cupy_emulator_equals_cpu(problem):
    from cuda_emulator.cupy_on_cpu import installed

    prefix, pheno, covar, cpu = problem
    with installed():
        gpu = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", backend="gpu",
                        memory=260_000)
    assert gpu.spec["block"] == cpu.spec["block"] and cpu.spec["block"][0] < 45
    pd.testing.assert_frame_equal(gpu.frame, cpu.frame, check_exact=False, rtol=1e-8)


@pytest.mark.slow
def test_dask_backend_on_a_local_cluster_equals_cpu(problem):
    pytest.importorskip("distributed")
    prefix, pheno, covar, cpu = problem
    dask = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", backend="dask",
                     memory=260_000, n_workers=2)
    pd.testing.assert_frame_equal(dask.frame, cpu.frame, check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(dask.summary, cpu.summary, check_exact=False, rtol=1e-12)


@pytest.mark.slow
def test_dask_backend_on_a_scheduler_address_equals_cpu(problem):
    distributed = pytest.importorskip("distributed")
    prefix, pheno, covar, cpu = problem
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco", backend="dask",
                        memory=260_000, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(res.frame, cpu.frame, check_exact=False, rtol=1e-12)
