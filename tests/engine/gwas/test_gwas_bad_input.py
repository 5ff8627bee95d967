"""Issue 30's GWAS probe as tests: a constant trait (p-values of round-off), a trait with +inf
or scaled by 1e200 (p = 1 everywhere) and a scan of zero SNPs (lambda_GC 26.7) are refused by
name; a trait scaled within range gives the same p-values (the test is scale-invariant) and
effects scaled with it."""
import numpy as np
import pytest

import engine
from engine import gwas
from gwas_oracles import random_bed, random_traits, standardized


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    prefix, values = random_bed(tmp_path_factory.mktemp("bad"), n=60, m=12, seed=30)
    pheno, covar = random_traits(standardized(values), t=2, c=1, seed=31)
    return prefix, pheno, covar


def test_constant_trait_is_refused_by_name(data):
    prefix, pheno, covar = data
    with pytest.raises(engine.CohortError, match=r"trait 'y1' is constant \(3.5 for all 60"):
        gwas.scan(prefix, pheno.assign(y1=3.5), covar, kinship="all")


def test_trait_constant_up_to_round_off_is_refused(data):
    prefix, pheno, covar = data
    wobble = 0.1 + 1e-17 * np.arange(len(pheno))
    with pytest.raises(engine.CohortError, match=r"trait 'y0' is constant"):
        gwas.scan(prefix, pheno.assign(y0=wobble), covar, kinship="all")


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinite_trait_values_are_refused_with_ids(data, value):
    prefix, pheno, covar = data
    bad = pheno.copy()
    bad.loc[3, "y0"] = value
    with pytest.raises(engine.CohortError, match=r"pheno: column 'y0' holds 1 infinite value.*"
                       r"'f3', 'i3'"):
        gwas.scan(prefix, bad, covar, kinship="all")


def test_infinite_covariate_is_refused(data):
    prefix, pheno, covar = data
    bad = covar.copy()
    bad.loc[0, "c0"] = np.inf
    with pytest.raises(engine.CohortError, match=r"covar: column 'c0' holds 1 infinite"):
        gwas.scan(prefix, pheno, bad, kinship="all")


@pytest.mark.parametrize("factor", [1e200, 1e-200])
def test_extreme_scales_are_refused_with_the_rescaling(data, factor):
    prefix, pheno, covar = data
    with pytest.raises(engine.CohortError, match=r"trait 'y0' has standard deviation .*"
                       r"rescale the trait \(e.g. divide it by 1e"):
        gwas.scan(prefix, pheno.assign(y0=pheno["y0"] * factor), covar, kinship="all")


def test_large_scales_within_range_change_no_p_value(data):
    """Oracle: the GLS test is invariant to the trait's unit; effects and SEs scale with it."""
    prefix, pheno, covar = data
    base = gwas.scan(prefix, pheno, covar, kinship="all").frame
    big = gwas.scan(prefix, pheno.assign(y0=pheno["y0"] * 1e60, y1=pheno["y1"] * 1e-60),
                    covar, kinship="all").frame
    key = ["Pheno", "SNP"]
    base, big = base.sort_values(key, ignore_index=True), big.sort_values(key, ignore_index=True)
    np.testing.assert_allclose(big["PValue"], base["PValue"], rtol=1e-6)
    factor = np.where(base["Pheno"].astype(str) == "y0", 1e60, 1e-60)
    np.testing.assert_allclose(big["SnpWeight"], base["SnpWeight"] * factor, rtol=1e-6)
    np.testing.assert_allclose(big["SnpWeightSE"], base["SnpWeightSE"] * factor, rtol=1e-6)


@pytest.mark.parametrize("snps", [slice(0, 0), [], np.zeros(12, bool)],
                         ids=["empty slice", "empty list", "all-false mask"])
def test_zero_snps_report_nothing(data, snps):
    prefix, pheno, covar = data
    with pytest.raises(engine.CohortError, match=r"snps selects no SNP.*no lambda_GC"):
        gwas.scan(prefix, pheno, covar, kinship="all", snps=snps)
