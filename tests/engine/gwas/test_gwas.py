"""gwas.scan against FaST-LMM's published outputs, FaST-LMM itself, and brute-force GLS."""
import numpy as np
import pandas as pd
import pytest

from engine import gwas
from gwas_oracles import (DATA, kinship, naive_gls, null_h2, null_sigma2, random_bed,
                          random_traits, standardized)

TOY = DATA / "toydata"
N300 = DATA / "n300"


@pytest.fixture(scope="module")
def toy_loco():
    return gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                     covar=TOY / "toydata.cov", kinship="loco", snps=slice(None, None, 10))


def test_loco_against_fastlmm_expected_two_looc(toy_loco):
    expected = pd.read_csv(TOY / "expected_single_snp_two_looc.txt", sep="\t")
    both = toy_loco.frame.merge(expected, on="SNP", suffixes=("", "_fastlmm"))
    assert len(both) == len(expected) == 1000 == len(toy_loco.frame)
    np.testing.assert_allclose(both.PValue, both.PValue_fastlmm, rtol=0, atol=1e-5)
    # the file prints 3 significant digits for small p; 9 for weights and SEs
    np.testing.assert_allclose(both.PValue, both.PValue_fastlmm, rtol=2e-3)
    np.testing.assert_allclose(both.SnpWeight, both.SnpWeight_fastlmm, rtol=2e-3, atol=1e-7)
    np.testing.assert_allclose(both.SnpWeightSE, both.SnpWeightSE_fastlmm, rtol=1e-6)
    np.testing.assert_allclose(both.Nullh2, both.Nullh2_fastlmm, atol=1e-5)
    assert (both.Chr == both.Chr_fastlmm).all() and (both.ChrPos == both.ChrPos_fastlmm).all()


def test_loco_h2_per_chromosome_published(toy_loco):
    published = {1: 0.14177, 2: 0.03043, 3: 0.01832, 4: 0.04246, 5: 0.02199}
    h2 = toy_loco.h2.loc["toydata.phe"]
    assert list(h2.index) == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(h2.to_numpy(), list(published.values()), atol=6e-6)


@pytest.mark.parametrize("name", ["one", "linreg"])
def test_n300_against_fastlmm_expected(name):
    bed = N300 / "all_chr.maf0.001.N300"
    kin = bed if name == "one" else np.eye(300)      # G0 = all SNPs / no kinship
    res = gwas.scan(bed=bed, pheno=N300 / "phenSynthFrom22.23.N300.txt",
                    covar=N300 / "all_chr.maf0.001.covariates.N300.txt", kinship=kin,
                    snps=slice(0, 10))
    expected = pd.read_csv(N300 / f"expected_single_snp_{name}.txt", sep="\t")
    both = res.frame.merge(expected, on="SNP", suffixes=("", "_fastlmm"))
    assert len(both) == 10
    np.testing.assert_allclose(both.PValue, both.PValue_fastlmm, rtol=1e-10)
    if name == "one":
        np.testing.assert_allclose(both.SnpWeight, both.SnpWeight_fastlmm, rtol=1e-10)
        np.testing.assert_allclose(both.SnpWeightSE, both.SnpWeightSE_fastlmm, rtol=1e-10)
        np.testing.assert_allclose(both.Nullh2, both.Nullh2_fastlmm, rtol=1e-12)


@pytest.fixture(scope="module")
def random_problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("gwas_random")
    prefix, values = random_bed(path, n=90, m=40, chromosomes=2, missing=0.02, seed=3)
    G = standardized(values)
    pheno, covar = random_traits(G, t=4, c=2, seed=4)
    return prefix, G, pheno, covar


@pytest.mark.parametrize("kin", ["all", "loco"])
def test_blocked_algorithm_equals_naive_cholesky_gls(random_problem, kin):
    prefix, G, pheno, covar = random_problem
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship=kin, memory=400_000)
    assert res.spec["block"][0] < G.shape[1] and res.spec["block"][1] < 4   # several blocks
    C = covar[["c0", "c1"]].to_numpy()
    chrom = res.frame.Chr.to_numpy()[: G.shape[1]]
    for j, trait in enumerate(["y0", "y1", "y2", "y3"]):
        rows = res.frame[res.frame.Pheno == trait]
        for label in res.h2.columns:
            snps = np.arange(G.shape[1]) if kin == "all" else np.flatnonzero(chrom == label)
            K = kinship(G if kin == "all" else np.delete(G, snps, axis=1))
            h2 = res.h2.loc[trait, label]
            want = naive_gls(G[:, snps], C, pheno[trait].to_numpy(), K, h2)
            got = rows.iloc[snps][["SnpWeight", "SnpWeightSE", "PValue"]].to_numpy()
            np.testing.assert_allclose(got, want, rtol=1e-10)
            assert (rows.iloc[snps].Nullh2 == h2).all()


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_h2_maximises_the_null_likelihood(random_problem, method):
    prefix, G, pheno, covar = random_problem
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all", h2_method=method)
    C = covar[["c0", "c1"]].to_numpy()
    K = kinship(G)
    for trait in ["y0", "y1", "y2", "y3"]:
        y = pheno[trait].to_numpy()
        want = null_h2(C, y, K, method)
        h2 = res.h2.loc[trait, "all"]
        assert h2 == pytest.approx(want, abs=1e-6)
        assert res.sigma2.loc[trait, "all"] == pytest.approx(null_sigma2(C, y, K, h2, method),
                                                             rel=1e-10)
    np.testing.assert_array_equal(res.summary.h2, res.h2.mean(axis=1))


def test_multi_trait_call_equals_single_trait_calls(random_problem):
    prefix, G, pheno, covar = random_problem
    multi = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="loco")
    for trait in ["y0", "y3"]:
        single = gwas.scan(bed=prefix, pheno=pheno[["FID", "IID", trait]], covar=covar,
                           kinship="loco")
        part = multi.frame[multi.frame.Pheno == trait].reset_index(drop=True)
        pd.testing.assert_frame_equal(part, single.frame, check_exact=False, rtol=1e-12,
                                      check_categorical=False)
        pd.testing.assert_series_equal(multi.h2.loc[trait], single.h2.loc[trait])


def test_count_a1_flips_the_effect_only():
    kwargs = dict(bed=N300 / "all_chr.maf0.001.N300", pheno=N300 / "phenSynthFrom22.23.N300.txt",
                  kinship="all", snps=slice(0, 30))
    a2, a1 = gwas.scan(count_A1=False, **kwargs), gwas.scan(count_A1=True, **kwargs)
    np.testing.assert_allclose(a1.frame.SnpWeight, -a2.frame.SnpWeight, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(a1.frame.PValue, a2.frame.PValue, rtol=1e-9)


@pytest.mark.slow  # several traits' scans
def test_against_fastlmm_single_snp_on_several_traits():
    fastlmm = pytest.importorskip("fastlmm.association")
    from pysnptools.snpreader import Bed, SnpData

    bed = Bed(str(TOY / "toydata.5chrom.bed"), count_A1=False)[:, ::20]
    phe = pd.read_csv(TOY / "toydata.phe", sep=r"\s+", header=None)
    rng = np.random.default_rng(7)
    y = np.column_stack([phe[2], phe[2] + rng.normal(size=len(phe)), rng.normal(size=len(phe))])
    iid = phe[[0, 1]].to_numpy(dtype=str)
    pheno = SnpData(iid=iid, sid=["a", "b", "c"], val=y)
    ours_pheno = pd.DataFrame({"FID": iid[:, 0], "IID": iid[:, 1], "a": y[:, 0], "b": y[:, 1],
                               "c": y[:, 2]})
    theirs = fastlmm.single_snp(bed, pheno, covar=str(TOY / "toydata.cov"), count_A1=False)
    ours = gwas.scan(bed=TOY / "toydata.5chrom", pheno=ours_pheno, covar=TOY / "toydata.cov",
                     kinship="loco", snps=slice(None, None, 20))
    both = ours.frame.merge(theirs, on=["Pheno", "SNP"], suffixes=("", "_fastlmm"))
    assert len(both) == len(ours.frame) == 3 * 500
    np.testing.assert_allclose(both.PValue, both.PValue_fastlmm, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(both.SnpWeightSE, both.SnpWeightSE_fastlmm, rtol=1e-5)
    np.testing.assert_allclose(both.Nullh2, both.Nullh2_fastlmm, atol=2e-5)


@pytest.mark.parametrize("dof", [3, 40, 497, 99_996])
def test_f_tail_table_equals_scipy_fdtrc(dof):
    from scipy import special

    from engine.gwas.gls import f_tail

    rng = np.random.default_rng(dof)
    F = np.concatenate([[0.0, 1e-300, 2.0 ** -18, 1.0, 1e4, 1e8, np.inf],
                        rng.uniform(0, 10, 20_000), rng.uniform(0, 2_000, 20_000)])
    want = special.fdtrc(1.0, dof, F)
    got = f_tail(dof)(F)
    np.testing.assert_allclose(got, want, rtol=2e-12, atol=1e-300)
    assert got[0] == 1.0 and got[6] == 0.0


@pytest.mark.slow  # a fresh interpreter
def test_gwas_is_lazy_and_imports_only_the_floors_beneath_it():
    import ast
    import subprocess
    import sys
    from pathlib import Path

    probe = "import engine, sys; print('engine.gwas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[3], check=True)
    assert out.stdout.strip() == "False"
    allowed = {"numpy", "scipy", "pandas", "pyarrow", "bed_reader", "distributed", "dask", "cupy",
               "cupyx", "numba", "threadpoolctl"}
    for path in (Path(gwas.__file__).parent).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 2:
                assert node.module.split(".")[0] in ("core", "data"), (path.name, node.module)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                top = node.module.split(".")[0]
                assert top in allowed or top in sys.stdlib_module_names, (path.name, top)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    assert top in allowed or top in sys.stdlib_module_names, (path.name, top)
