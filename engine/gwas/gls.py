"""Seed 004's Algorithm 5 for a block of SNPs x a block of traits, as matrix-matrix products.

In the covariates' complement the kinship is diagonal (``kinship.Eigenbasis``): with the rotated
SNP block X' = U^T X_R (line 4, one GEMM per block), the rotated traits Y' = U^T Y (line 5) and
W_kj = 1 / d_jk = 1 / (h2_j S_k + 1 - h2_j) (lines 7-8: K_j K_j^T = D_j^-1), the per-problem
quantities of lines 14-17 for every SNP i and trait j are

    S_BR_ij = sum_k X'_ki^2 W_kj          ->  (X' o X')^T W          (one GEMM)
    b_B_ij  = sum_k X'_ki Y'_kj W_kj      ->  X'^T (Y' o W)          (one GEMM)
    y'K y_j = sum_k Y'_kj^2 W_kj          (once per trait)

and line 18's solve is a division: beta = b_B / S_BR (the covariate block S_TL was projected
out).  The statistics are FaST-LMM's ``single_snp``: residual quadratic form
r2 = y'Ky - b_B beta, Var(beta) = r2 / (n' - 1) / S_BR (n' = n - p_L: the classical GLS
sigma^2 = RSS / (n - p)), F = beta^2 / Var(beta) on (1, n' - 1) degrees of freedom.
``xp`` is the array module (NumPy, or CuPy on a GPU).
"""
from __future__ import annotations

import numpy as np
from scipy import special


def rotate(UT, G, xp):
    """X' = U^T G (Algorithm 5 line 4); SNPs explained by the covariates (residual standard
    deviation <= 1e-10, FaST-LMM's rule) become zero columns."""
    X = UT @ G
    residual_sd = xp.sqrt((X * X).sum(axis=0) / G.shape[0])
    return X * (residual_sd > 1e-10)[None, :]


def association(X, W, YW, yKy, dof, xp):
    """beta and Var(beta), each m_b x t_b, for rotated SNPs X (n' x m_b), W (n' x t_b),
    YW = Y' o W and yKy (t_b,).  A SNP with no variation left gets beta 0, Var inf (p = 1)."""
    sKs = (X * X).T @ W
    sKy = X.T @ YW
    tested = sKs > 0
    safe = xp.where(tested, sKs, 1.0)
    beta = xp.where(tested, sKy / safe, 0.0)
    r2 = yKy[None, :] - sKy * beta
    var = xp.where(tested, r2 / dof / safe, xp.inf)
    return beta, var


def p_value(beta: np.ndarray, var: np.ndarray, dof: int) -> np.ndarray:
    """P(F(1, dof) > beta^2 / Var(beta)): FaST-LMM's ``stats.f.sf(chi2, 1, n - (p_L + 1))``."""
    return special.fdtrc(1.0, dof, beta * beta / var)
