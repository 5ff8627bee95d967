"""W = B T (gls.weight_factors): entrywise accurate where it is used, refused where it is not,
and a scan through the factors equals the naive per-problem Cholesky GLS."""
import numpy as np
import pytest

from engine import gwas
from engine.gwas import gls
from gwas_oracles import kinship, naive_gls, random_bed, random_traits, standardized


def weights(S, h2):
    return 1.0 / (S[:, None] * h2[None, :] + (1.0 - h2[None, :]))


def test_factors_are_columns_of_w_and_exact_to_1e13_in_every_entry():
    rng = np.random.default_rng(0)
    W = weights(np.sort(rng.uniform(0.6, 1.5, 499)), rng.uniform(0.0, 0.99999, 1000))
    B, T = gls.weight_factors(W)
    assert B is not None and B.shape[1] <= 20 and T.shape == (B.shape[1], 1000)
    assert all((np.abs(W - b[:, None]).max(axis=0) == 0).any() for b in B.T)   # W's own columns
    assert np.max(np.abs(B @ T - W) / W) <= 1e-13
    X2 = rng.normal(size=(499, 30)) ** 2                 # the denominators S_BR it serves
    np.testing.assert_allclose(T.T @ (B.T @ X2), W.T @ X2, rtol=1e-13)


@pytest.mark.parametrize("case", ["wide spectrum", "few traits", "not finite"])
def test_factors_refused_where_they_would_be_inexact_or_dearer(case):
    rng = np.random.default_rng(1)
    S = np.sort(rng.exponential(1.0, 499))
    h2 = rng.uniform(0.0, 0.99999, 1000)
    if case == "wide spectrum":        # related people: zero and very large eigenvalues
        S = np.sort(np.r_[np.zeros(50), rng.exponential(1, 400), rng.uniform(20, 200, 49)])
    if case == "few traits":
        h2 = h2[:3]
    W = weights(S, h2)
    if case == "not finite":
        W[3, 7] = np.inf
    B, T = gls.weight_factors(W)
    assert B is None and T is W


def test_scan_through_the_factors_equals_naive_cholesky_gls(tmp_path, monkeypatch):
    prefix, values = random_bed(tmp_path, n=200, m=400, chromosomes=1, seed=5)
    G = standardized(values)
    pheno, covar = random_traits(G, t=60, c=2, seed=6)
    made = []
    factors = gls.weight_factors
    monkeypatch.setattr(gls, "weight_factors", lambda W: made.append(factors(W)) or made[-1])
    res = gwas.scan(bed=prefix, pheno=pheno, covar=covar, kinship="all")
    assert made and made[0][0] is not None                  # the factored path was taken
    C, K = covar[["c0", "c1"]].to_numpy(), kinship(G)
    for trait in ["y0", "y17", "y38", "y59"]:              # h2 from low to high
        rows = res.frame[res.frame.Pheno == trait]
        want = naive_gls(G, C, pheno[trait].to_numpy(), K, res.h2.loc[trait, "all"])
        np.testing.assert_allclose(rows[["SnpWeight", "SnpWeightSE", "PValue"]].to_numpy(),
                                   want, rtol=1e-10)
