"""Traits of known heritability on real genotypes, for multi-trait scans and scale tests.

Trait j = sqrt(h2_j) g_j / sd(g_j) + sqrt(1 - h2_j) e_j, where g_j = X_j beta_j sums the
unit-standardised genotypes X_j of its causal SNPs with beta ~ N(0, 1), and e_j ~ N(0, 1):
the causal SNPs explain a fraction h2_j of the trait's variance in the sample (up to the
sample correlation of g_j and e_j).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from .genotypes import Genotypes, standardize


def simulate_traits(genotypes, t: int, h2=0.5, causal=10, seed: int = 0,
                    count_A1: bool = False) -> pd.DataFrame:
    """``t`` traits on ``genotypes`` (a PLINK prefix, a ``Genotypes`` or an n x m array of
    allele counts); ``h2`` a number or one per trait; ``causal`` the number of causal SNPs per
    trait (drawn at random for each trait) or the positions of SNPs causal for every trait.

    Returns a DataFrame with FID, IID and columns trait_0 ... trait_{t-1}; ``.attrs`` holds
    ``h2`` (t,), ``causal`` (t x k SNP positions) and ``beta`` (t x k effects).
    """
    if isinstance(genotypes, np.ndarray):
        values = np.asarray(genotypes, dtype=float)
        n, m = values.shape
        ids = pd.DataFrame({"FID": [f"id{i}" for i in range(n)],
                            "IID": [f"id{i}" for i in range(n)]})
        read = lambda cols: standardize(values[:, cols].copy())
    else:
        g = genotypes if isinstance(genotypes, Genotypes) else Genotypes.open(genotypes,
                                                                               count_A1)
        n, m = g.n, g.m
        ids = g.ids().to_frame(index=False)
        read = lambda cols: g.select(cols).read()
    h2 = np.broadcast_to(np.asarray(h2, dtype=float), (t,)).copy()
    if ((h2 < 0) | (h2 > 1)).any():
        bad = h2[(h2 < 0) | (h2 > 1)][:5]
        raise CohortError(f"h2: heritabilities must lie in [0, 1], got {bad}.")
    rng = np.random.default_rng(seed)
    if np.ndim(causal) == 0:
        k = int(causal)
        if not 1 <= k <= m:
            raise CohortError(f"causal: {k} causal SNPs asked of {m}; use 1 ... {m}.")
        positions = np.stack([rng.choice(m, size=k, replace=False) for _ in range(t)])
    else:
        positions = np.broadcast_to(np.asarray(causal, dtype=int), (t, len(causal))).copy()
    used = np.unique(positions)
    X = read(used)                                        # n x |used| standardised
    column = np.searchsorted(used, positions)             # t x k columns of X
    beta = rng.normal(size=positions.shape)
    g = np.zeros((n, t))                                  # n x t genetic values
    for c in range(positions.shape[1]):
        g += X[:, column[:, c]] * beta[:, c]
    sd = g.std(axis=0)
    sd[sd == 0] = 1.0
    noise = rng.normal(size=(n, t))
    Y = np.sqrt(h2) * g / sd + np.sqrt(1.0 - h2) * noise
    frame = pd.concat([ids, pd.DataFrame(Y, columns=[f"trait_{j}" for j in range(t)])], axis=1)
    frame.attrs.update(h2=h2, causal=positions, beta=beta)
    return frame
