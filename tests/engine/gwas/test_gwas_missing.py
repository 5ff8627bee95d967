"""Traits with missing values: each trait is tested on the individuals who have it, as
FaST-LMM ``single_snp`` called for that trait alone (its own kinship standardisation,
eigendecomposition and h2), checked against FaST-LMM itself and against scans of each trait
with its missing individuals removed beforehand."""
import numpy as np
import pandas as pd
import pytest

from engine import CohortError, gwas

TOY = __import__("pathlib").Path(__file__).resolve().parents[3] / "sample_data" / "gwas" \
    / "toydata"
SNPS = slice(None, None, 20)


@pytest.fixture(scope="module")
def traits():
    """Four traits on the toy people: a complete, two with their own missing individuals, one
    sharing b's pattern; one person missing every trait."""
    phe = pd.read_csv(TOY / "toydata.phe", sep=r"\s+", header=None)
    rng = np.random.default_rng(11)
    n = len(phe)
    y = np.column_stack([phe[2], phe[2] + rng.normal(size=n), rng.normal(size=n),
                         rng.normal(size=n)])
    y[rng.choice(n, 60, replace=False), 1] = np.nan
    y[:, 3] = np.where(np.isnan(y[:, 1]), np.nan, y[:, 3])
    y[rng.choice(n, 35, replace=False), 2] = np.nan
    y[5, :] = np.nan
    return pd.DataFrame({"FID": phe[0].astype(str), "IID": phe[1].astype(str),
                         **{name: y[:, j] for j, name in enumerate("abcd")}})


@pytest.fixture(scope="module")
def scanned(traits):
    return gwas.scan(bed=TOY / "toydata.5chrom", pheno=traits, covar=TOY / "toydata.cov",
                     kinship="loco", snps=SNPS)


def test_each_trait_equals_its_own_scan_without_its_missing_people(traits, scanned):
    assert scanned.spec["patterns"] == 3 and list(scanned.h2.index) == list("abcd")
    assert list(scanned.summary.n) == [499, 439, 464, 439]      # person 5 lacks every trait
    for name in "abcd":
        alone = traits[["FID", "IID", name]].dropna()
        own = gwas.scan(bed=TOY / "toydata.5chrom", pheno=alone, covar=TOY / "toydata.cov",
                        kinship="loco", snps=SNPS)
        mine = scanned.frame[scanned.frame.Pheno == name].reset_index(drop=True)
        np.testing.assert_allclose(mine.PValue, own.frame.PValue, rtol=1e-12)
        np.testing.assert_allclose(mine.SnpWeight, own.frame.SnpWeight, rtol=1e-10, atol=1e-14)
        assert (mine.SNP == own.frame.SNP).all()
        pd.testing.assert_series_equal(scanned.h2.loc[name], own.h2.loc[name],
                                       check_exact=False, rtol=1e-12)


@pytest.mark.slow
def test_against_fastlmm_single_snp_one_trait_per_call(traits, scanned):
    fastlmm = pytest.importorskip("fastlmm.association")
    from pysnptools.snpreader import Bed, SnpData

    bed = Bed(str(TOY / "toydata.5chrom.bed"), count_A1=False)[:, SNPS]
    iid = traits[["FID", "IID"]].to_numpy(dtype=str)
    for name in "bc":
        pheno = SnpData(iid=iid, sid=[name], val=traits[[name]].to_numpy())
        theirs = fastlmm.single_snp(bed, pheno, covar=str(TOY / "toydata.cov"), count_A1=False)
        ours = scanned.frame[scanned.frame.Pheno == name]
        both = ours.merge(theirs, on="SNP", suffixes=("", "_fastlmm"))
        assert len(both) == len(ours) == 500
        np.testing.assert_allclose(both.PValue, both.PValue_fastlmm, rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(both.SnpWeightSE, both.SnpWeightSE_fastlmm, rtol=1e-5)
        np.testing.assert_allclose(both.Nullh2, both.Nullh2_fastlmm, atol=2e-5)


def test_summary_statistics_count_each_traits_people(scanned):
    stats = gwas.summary_statistics(scanned)
    assert stats.groupby("PHENO").N.first().to_dict() == {"a": 499, "b": 439, "c": 464, "d": 439}


def test_refusals(traits, tmp_path):
    with pytest.raises(CohortError, match="missing for different individuals"):
        gwas.scan(bed=TOY / "toydata.5chrom", pheno=traits, covar=TOY / "toydata.cov",
                  snps=SNPS, output=tmp_path / "out")
    empty = traits.assign(e=np.nan)
    with pytest.raises(CohortError, match=r"trait\(s\) \['e'\] have no value"):
        gwas.scan(bed=TOY / "toydata.5chrom", pheno=empty, snps=SNPS)
