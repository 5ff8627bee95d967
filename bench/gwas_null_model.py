"""The null model alone (h2 and sigma2 of every trait) at the largest problem's n = 1,000:
``python -m bench.gwas_null_model [t] [backend]`` (default t = 20,000, cpu).

Kinship from 10,000 SNPs of the 1,000 people of bench/gwas_largest.py, its eigendecomposition
in the intercept's complement, t traits from ``gwas.simulate_traits`` (h2 = 0.05, as there);
reported: seconds of ``heritability.estimate`` (REML, the default) on the CPU or the GPU.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from bench import gwas_largest
from engine import gwas
from engine.gwas import heritability, kinship


def main(t: int = 20_000, backend: str = "cpu") -> dict:
    genotypes = gwas.Genotypes.open(gwas_largest.genotypes(10_000))
    pheno = gwas.simulate_traits(genotypes, t=t, h2=0.05, causal=10, seed=0)
    Y = pheno.iloc[:, 2:].to_numpy()
    C = kinship.covariate_complement(np.ones((genotypes.n, 1)))
    basis = kinship.Eigenbasis.of(kinship.scale_to_n(kinship.gram(genotypes)), C)
    UY = basis.U.T @ Y
    xp = np
    if backend == "gpu":
        import cupy as xp
    heritability.estimate(basis.S, UY[:, :100], C.shape[1], xp=xp)        # compile, warm up
    start = time.perf_counter()
    h2, sigma2 = heritability.estimate(basis.S, UY, C.shape[1], xp=xp)
    seconds = time.perf_counter() - start
    record = {"n": genotypes.n, "t": t, "backend": backend, "null_model_s": round(seconds, 2),
              "median_h2": round(float(np.median(h2)), 4)}
    print(record)
    return record


if __name__ == "__main__":
    main(*(int(a) if a.isdigit() else a for a in sys.argv[1:]))
