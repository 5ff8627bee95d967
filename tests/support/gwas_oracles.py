"""Brute-force references for the GWAS tests, written from the definitions (not engine code).

- ``standardized``: (x - mean) / population sd over observed genotypes, missing -> 0.
- ``kinship``: G G^T scaled to trace n.
- ``naive_gls``: one GLS per (SNP, trait) through the Cholesky factor of
  V = h2 K + (1 - h2) I: whitened least squares on [covariates, 1, SNP], s^2 = RSS / (n - p),
  t = beta / SE, two-sided p on n - p degrees of freedom.
- ``null_h2``: h2 maximising the restricted (REML) or full (ML) Gaussian likelihood of the null
  model, from dense determinants and a scalar bounded optimiser.
- ``random_bed``: a PLINK fileset of random genotypes written by bed-reader.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import linalg, optimize, stats

DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "sample_data" / "gwas"


def standardized(values: np.ndarray) -> np.ndarray:
    out = np.empty_like(values, dtype=float)
    for i in range(values.shape[1]):
        x = values[:, i].astype(float)
        seen = ~np.isnan(x)
        if not seen.any():                 # nobody genotyped: all imputed, 0
            out[:, i] = 0.0
            continue
        sd = x[seen].std()
        out[:, i] = np.where(seen, (x - x[seen].mean()) / sd if sd > 0 else 0.0, 0.0)
    return out


def kinship(G: np.ndarray) -> np.ndarray:
    K = G @ G.T
    return K * (K.shape[0] / np.trace(K))


def naive_gls(G, C, y, K, h2):
    """beta, SE, p of every column of G (n x m) for one trait y with covariates C (n x c)."""
    n = len(y)
    L = np.linalg.cholesky(h2 * K + (1.0 - h2) * np.eye(n))
    yw = linalg.solve_triangular(L, y, lower=True)
    out = np.empty((G.shape[1], 3))
    for i in range(G.shape[1]):
        X = np.column_stack([C, np.ones(n), G[:, i]])
        Xw = linalg.solve_triangular(L, X, lower=True)
        A = Xw.T @ Xw
        b = np.linalg.solve(A, Xw.T @ yw)
        resid = yw - Xw @ b
        dof = n - X.shape[1]
        s2 = resid @ resid / dof
        se = np.sqrt(s2 * np.linalg.inv(A)[-1, -1])
        out[i] = b[-1], se, 2 * stats.t.sf(abs(b[-1] / se), dof)
    return out


def null_h2(C, y, K, method="reml"):
    """argmax over [0, 0.99999] of the null model's REML or ML likelihood (sigma^2 profiled)."""
    n = len(y)
    X = np.column_stack([C, np.ones(n)])
    p = X.shape[1]

    def nll(h2):
        V = h2 * K + (1.0 - h2) * np.eye(n)
        Vi = np.linalg.inv(V)
        XVX = X.T @ Vi @ X
        b = np.linalg.solve(XVX, X.T @ Vi @ y)
        r = y - X @ b
        rss = r @ Vi @ r
        logdet = np.linalg.slogdet(V)[1]
        if method == "ml":
            return 0.5 * (logdet + n * np.log(2 * np.pi * rss / n) + n)
        m = n - p
        return 0.5 * (logdet + np.linalg.slogdet(XVX)[1] - np.linalg.slogdet(X.T @ X)[1]
                      + m * np.log(2 * np.pi * rss / m) + m)

    grid = np.linspace(0, 0.99999, 41)
    values = [nll(h) for h in grid]
    k = int(np.argmin(values))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-10})
    return res.x


def null_sigma2(C, y, K, h2, method="reml"):
    """The profiled variance at h2: GLS residual quadratic form / (n - p) (REML) or / n (ML)."""
    n = len(y)
    X = np.column_stack([C, np.ones(n)])
    Vi = np.linalg.inv(h2 * K + (1.0 - h2) * np.eye(n))
    r = y - X @ np.linalg.solve(X.T @ Vi @ X, X.T @ Vi @ y)
    return (r @ Vi @ r) / (n if method == "ml" else n - X.shape[1])


def random_bed(path, n=120, m=60, chromosomes=2, missing=0.0, seed=0):
    """Write random genotypes (0/1/2, some missing) as a PLINK fileset; return (prefix, values)."""
    from bed_reader import to_bed

    rng = np.random.default_rng(seed)
    freq = rng.uniform(0.1, 0.5, m)
    values = rng.binomial(2, freq, size=(n, m)).astype(float)
    if missing:
        values[rng.random((n, m)) < missing] = np.nan
    prefix = str(path / "random")
    to_bed(prefix + ".bed", values, properties={
        "fid": [f"f{i}" for i in range(n)], "iid": [f"i{i}" for i in range(n)],
        "sid": [f"snp{j}" for j in range(m)],
        "chromosome": [str(1 + j * chromosomes // m) for j in range(m)],
        "bp_position": np.arange(m) + 1}, count_A1=False)
    return prefix, values


def random_traits(G, t, c=2, seed=1):
    """(pheno, covar) DataFrames with FID/IID of ``random_bed`` individuals: trait j is a
    polygenic score of the standardised genotypes G with heritability about j / t, plus noise."""
    rng = np.random.default_rng(seed)
    n, m = G.shape
    ids = {"FID": [f"f{i}" for i in range(n)], "IID": [f"i{i}" for i in range(n)]}
    traits = {}
    for j in range(t):
        score = G @ rng.normal(size=m)
        h2 = (j + 0.5) / t
        traits[f"y{j}"] = np.sqrt(h2) * score / score.std() + np.sqrt(1 - h2) * rng.normal(size=n)
    pheno = pd.DataFrame({**ids, **traits})
    covar = pd.DataFrame({**ids, **{f"c{j}": rng.normal(size=n) for j in range(c)}})
    return pheno, covar
