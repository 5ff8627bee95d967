"""Kinship (genetic relationship) matrices and their one eigendecomposition per kinship.

The kinship of a set of SNPs is Phi = G G^T, G the n x m unit-standardised genotypes, scaled to
trace n (FaST-LMM's ``DiagKtoN``).  Leave-one-chromosome-out (LOCO) tests the SNPs of chromosome
c against the kinship of all the other tested SNPs (FaST-LMM's default, G0 = test_snps).

The eigenbasis (FabregatTraver2014, Algorithm 5 line 2) is taken, as FaST-LMM's ``lmm_cov`` does, in the
space orthogonal to the covariates X_L: with C an orthonormal basis of that space (n x (n - p_L)),
C^T Phi C = V diag(S) V^T and U = C V.  Rotating by U^T projects the covariates out, so every
GLS problem of the scan has one unknown left and K_j = diag(h2_j S + 1 - h2_j)^(-1/2) is diagonal
(FabregatTraver2014's lines 3-10 collapse: X_L' = U^T X_L = 0).  This is the exact GLS: U^T y is a full set
of error contrasts of the model y = X_L b + x_i beta + e, e ~ N(0, sigma^2 (h2 Phi + (1-h2) I)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import CohortError


def gram(genotypes, block: int = 2048) -> np.ndarray:
    """G G^T of the view's SNPs (unit-standardised), accumulated over SNP blocks."""
    n = genotypes.n
    K = np.zeros((n, n))
    for start in range(0, genotypes.m, block):
        G = genotypes.read(start, start + block)
        K += G @ G.T
    return K


def scale_to_n(K: np.ndarray) -> np.ndarray:
    """K scaled so that its trace is n (FaST-LMM's DiagKtoN)."""
    trace = np.trace(K)
    if not trace > 0:
        raise CohortError("kinship: the SNPs given for the kinship are all constant (trace 0); "
                          "use other SNPs or kinship='all'.")
    return K * (K.shape[0] / trace)


def covariate_complement(X: np.ndarray) -> np.ndarray:
    """C: an orthonormal basis (n x (n - p)) of the space orthogonal to the columns of X."""
    Q, R = np.linalg.qr(X, mode="complete")
    diag = np.abs(np.diag(R))
    if diag.size and diag.min() <= 1e-10 * max(diag.max(), 1.0):
        raise CohortError(f"covar: the covariates with the intercept are collinear "
                          f"(rank < {X.shape[1]}); drop redundant or constant covariate columns.")
    return Q[:, X.shape[1]:]


@dataclass(frozen=True)
class Eigenbasis:
    """U (n x n'), S (n'): the kinship's eigenpairs in the covariates' complement."""

    U: np.ndarray
    S: np.ndarray

    @classmethod
    def of(cls, K: np.ndarray, C: np.ndarray) -> "Eigenbasis":
        S, V = np.linalg.eigh(C.T @ K @ C)
        return cls(C @ V, S)

    def rotate(self, A: np.ndarray) -> np.ndarray:
        """U^T A, with the columns FaST-LMM treats as explained by the covariates zeroed
        (the standard deviation of their residual below 1e-10)."""
        UA = self.U.T @ A
        residual_sd = np.sqrt((UA * UA).sum(axis=0) / self.U.shape[0])
        UA[:, residual_sd <= 1e-10] = 0.0
        return UA
