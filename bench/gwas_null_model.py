"""The null model alone (h2 and sigma2 of every trait) at the largest problem's n = 1,000:
``python -m bench.gwas_null_model [t] [backend] [repeats]`` (default 20,000 cpu 3).

Kinship from 10,000 SNPs of the 1,000 people of bench/gwas_largest.py, its eigendecomposition
in the intercept's complement, t traits from ``gwas.simulate_traits`` (h2 = 0.05, as there);
reported: seconds of each of ``repeats`` calls of ``heritability.estimate`` (REML, the default)
on the CPU or the GPU (the first call also pays for touching fresh memory).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from bench import gwas_largest
from engine import gwas
from engine.gwas import heritability, kinship


def main(t: int = 20_000, backend: str = "cpu", repeats: int = 3) -> dict:
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
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        h2, sigma2 = heritability.estimate(basis.S, UY, C.shape[1], xp=xp)
        seconds.append(round(time.perf_counter() - start, 2))
    record = {"n": genotypes.n, "t": t, "backend": backend, "null_model_s": seconds,
              "median_h2": round(float(np.median(h2)), 4)}
    print(record)
    return record


if __name__ == "__main__":
    main(*(int(a) if a.isdigit() else a for a in sys.argv[1:]))
