"""gwas readers: genotypes as FaST-LMM standardises them, phenotype/covariate files of every
accepted kind matched by (FID, IID), and the errors for ids and values that cannot be used."""
import numpy as np
import pandas as pd
import pytest

from engine import CohortError, gwas
from gwas_oracles import DATA, random_bed, random_traits, standardized

TOY = DATA / "toydata"
SNPS = slice(0, 400, 8)


def _toy_frames():
    read = lambda name: pd.read_csv(TOY / name, sep=r"\s+", header=None, dtype={0: str, 1: str})
    pheno, covar = read("toydata.phe"), read("toydata.cov")
    pheno.columns, covar.columns = ["FID", "IID", "toydata.phe"], ["FID", "IID", "cov"]
    return pheno, covar


@pytest.fixture(scope="module")
def reference():
    return gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                     covar=TOY / "toydata.cov", kinship="all", snps=SNPS).frame


def test_genotype_blocks_are_unit_standardised_with_mean_imputation(tmp_path):
    prefix, values = random_bed(tmp_path, n=50, m=12, missing=0.1, seed=5)
    values[:, 3] = 1.0                                     # a constant SNP
    values[:, 5] = np.nan                                  # a SNP nobody was genotyped for
    from bed_reader import to_bed
    to_bed(prefix + ".bed", values, count_A1=False, properties={
        "fid": [f"f{i}" for i in range(50)], "iid": [f"i{i}" for i in range(50)]})
    g = gwas.Genotypes.open(prefix)
    np.testing.assert_allclose(g.read(), standardized(values), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(g.read(2, 7, standardized=False), values[:, 2:7])
    assert (g.read()[:, 3] == 0).all() and (g.read()[:, 5] == 0).all()
    rows = np.arange(49, 0, -3)                            # some people, in another order
    np.testing.assert_allclose(g.keep(rows).read(1, 9), standardized(values[rows, 1:9]),
                               rtol=1e-13, atol=1e-15)
    a1 = gwas.Genotypes.open(prefix, count_A1=True).read(standardized=False)
    np.testing.assert_array_equal(a1, 2 - values)
    np.testing.assert_allclose(gwas.Genotypes.open(prefix, count_A1=True).read(),
                               standardized(2 - values), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["frame", "csv", "parquet", "plink_header", "shuffled"])
def test_every_pheno_source_gives_the_same_scan(tmp_path, reference, kind):
    pheno, covar = _toy_frames()
    if kind == "csv":
        pheno.to_csv(tmp_path / "p.csv", index=False)
        pheno = tmp_path / "p.csv"
    elif kind == "parquet":
        pheno.to_parquet(tmp_path / "p.parquet")
        pheno = tmp_path / "p.parquet"
    elif kind == "plink_header":
        pheno.to_csv(tmp_path / "p.txt", sep=" ", index=False)
        pheno = tmp_path / "p.txt"
    elif kind == "shuffled":
        pheno = pheno.sample(frac=1.0, random_state=0)
        covar = covar.sample(frac=1.0, random_state=1).set_index(["FID", "IID"])
    res = gwas.scan(bed=TOY / "toydata.5chrom", pheno=pheno, covar=covar, kinship="all",
                    snps=SNPS)
    pd.testing.assert_frame_equal(res.frame, reference, check_exact=False, rtol=1e-12)


def test_snps_by_ids_or_positions(reference):
    ids = reference.SNP.tolist()
    by_id = gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                      covar=TOY / "toydata.cov", kinship="all", snps=ids)
    pd.testing.assert_frame_equal(by_id.frame, reference)
    by_pos = gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                       covar=TOY / "toydata.cov", kinship="all",
                       snps=np.arange(10_000)[SNPS])
    pd.testing.assert_frame_equal(by_pos.frame, reference)
    mask = np.zeros(10_000, dtype=bool)
    mask[SNPS] = True
    by_mask = gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                        covar=TOY / "toydata.cov", kinship="all", snps=mask)
    pd.testing.assert_frame_equal(by_mask.frame, reference)


def test_unphenotyped_individuals_are_left_out_and_reported():
    pheno, covar = _toy_frames()
    res = gwas.scan(bed=TOY / "toydata.5chrom", pheno=pheno.iloc[50:], covar=covar,
                    kinship="all", snps=SNPS)
    assert res.spec["n"] == 450 and len(res.individuals) == 450
    assert res.individuals[0] == ("per50", "per50")


def _scan(pheno, covar=None, **kwargs):
    return gwas.scan(bed=TOY / "toydata.5chrom", pheno=pheno, covar=covar,
                     **{"kinship": "all", "snps": slice(0, 20), **kwargs})


def test_errors_name_the_ids_and_the_fix():
    pheno, covar = _toy_frames()
    stranger = pd.concat([pheno, pd.DataFrame({"FID": ["x"], "IID": ["y"], "toydata.phe": [1.0]})])
    with pytest.raises(CohortError, match=r"not in the \.fam.*\('x', 'y'\)"):
        _scan(stranger)
    with pytest.raises(CohortError, match=r"more than once.*per3"):
        _scan(pd.concat([pheno, pheno.iloc[[3]]]))
    gap = pheno.copy()
    gap.loc[7, "toydata.phe"] = np.nan                  # a missing trait value: dropped
    assert _scan(gap).spec["n"] == 499
    gap_covar = covar.copy()
    gap_covar.loc[7, "cov"] = np.nan                    # a missing covariate: refused
    with pytest.raises(CohortError, match=r"'cov' is missing for \[\('per7', 'per7'\)\]"):
        _scan(pheno, gap_covar)
    with pytest.raises(CohortError, match=r"covar: 1 phenotyped individuals have no covariates"):
        _scan(pheno, covar.drop(index=9))
    with pytest.raises(CohortError, match="not numeric"):
        _scan(pheno.assign(**{"toydata.phe": "high"}))
    with pytest.raises(CohortError, match="no FID column"):
        _scan(pheno.drop(columns="FID"))
    with pytest.raises(CohortError, match="collinear"):
        _scan(pheno, covar.assign(twice=2 * covar["cov"]))
    with pytest.raises(CohortError, match="symmetric 500 x 500"):
        _scan(pheno, kinship=np.eye(400))
    with pytest.raises(CohortError, match="LOCO needs two or more"):
        _scan(pheno, kinship="loco")
    with pytest.raises(CohortError, match="not in"):
        _scan(pheno, snps=["null_0", "rs_nowhere"])
    with pytest.raises(CohortError, match="not found"):
        _scan(TOY / "missing.phe")
    with pytest.raises(ValueError, match="use 'loco', 'all'"):
        _scan(pheno, kinship="LOCO")


def test_kinship_from_another_fileset_matches_individuals_by_id(tmp_path):
    prefix, values = random_bed(tmp_path, n=60, m=30, seed=8)
    pheno, covar = random_traits(standardized(values), t=2, seed=9)
    own = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all")
    # the same genotypes written with the individuals in reverse order serve as the kinship
    from bed_reader import to_bed
    other = tmp_path / "reversed"
    other.mkdir()
    to_bed(other / "rev.bed", np.ascontiguousarray(values[::-1]), count_A1=False, properties={
        "fid": [f"f{i}" for i in range(60)][::-1], "iid": [f"i{i}" for i in range(60)][::-1]})
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship=other / "rev")
    pd.testing.assert_frame_equal(res.frame, own.frame, check_exact=False, rtol=1e-10)
