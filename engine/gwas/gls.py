"""FabregatTraver2014's Algorithm 5 for a block of SNPs x a block of traits, as matrix-matrix products.

In the covariates' complement the kinship is diagonal (``kinship.Eigenbasis``): with the rotated
SNP block X' = U^T X_R (line 4, one GEMM per block), the rotated traits Y' = U^T Y (line 5) and
W_kj = 1 / d_jk = 1 / (h2_j S_k + 1 - h2_j) (lines 7-8: K_j K_j^T = D_j^-1), the per-problem
quantities of lines 14-17 for every SNP i and trait j are

    S_BR_ij = sum_k X'_ki^2 W_kj          ->  (X' o X')^T W          (one GEMM)
    b_B_ij  = sum_k X'_ki Y'_kj W_kj      ->  X'^T (Y' o W)          (one GEMM)
    y'K y_j = sum_k Y'_kj^2 W_kj          (once per trait)

W depends on trait j only through h2_j, and its columns, 1 / (1 + h2 (S_k - 1)) as functions of
h2, are a rank-r family to round-off (r about 13 on the bundled data): ``weight_factors`` writes
W = B T with B r of W's own columns, so (X' o X')^T W = T^T (B^T (X' o X')) costs r (n' + t) per
SNP instead of n' t, the scan's second GEMM almost gone.

and line 18's solve is a division: beta = b_B / S_BR (the covariate block S_TL was projected
out).  The statistics are FaST-LMM's ``single_snp``: residual quadratic form
r2 = y'Ky - b_B beta, Var(beta) = r2 / (n' - 1) / S_BR (n' = n - p_L: the classical GLS
sigma^2 = RSS / (n - p)), F = beta^2 / Var(beta) on (1, n' - 1) degrees of freedom.
``xp`` is the array module (NumPy, or CuPy on a GPU).
"""
from __future__ import annotations

import functools

import numpy as np
from scipy import special


def rotate(UT, G, xp):
    """X' = U^T G (Algorithm 5 line 4) and X' o X'; SNPs explained by the covariates (residual
    standard deviation <= 1e-10, FaST-LMM's rule) become zero columns of both."""
    X = UT @ G
    X2 = X * X
    explained = xp.sqrt(X2.sum(axis=0) / G.shape[0]) <= 1e-10
    if explained.any():
        X[:, explained] = 0.0
        X2[:, explained] = 0.0
    return X, X2


def weight_factors(W, tol=1e-13, candidates=128):
    """(B, T): W (n' x t) = B T with B (n' x r) r of W's columns and T (r x t), every entry of
    B T within ``tol`` of W's relatively (checked), so that sum_k X'_ki^2 W_kj, a sum of positive
    terms, keeps that relative accuracy; (None, W) where no such r is below n' t / (2 (n' + t))
    (then the plain GEMM is cheaper).

    The basis is chosen by a column-pivoted QR of at most ``candidates`` columns spread over
    the traits sorted by their weights' first row (h2 order: S_0 is the smallest eigenvalue; with
    64 candidates one LOCO kinship of the bundled data missed ``tol`` at every rank), its rank
    where the pivots fall below 1e-15 of the first, the coefficients by least squares.
    """
    from scipy import linalg

    n, t = W.shape
    r_max = int(n * t / (2 * (n + t)))
    if r_max < 1 or not np.isfinite(W).all():
        return None, W
    order = np.argsort(W[0], kind="stable")
    spread = order[np.unique(np.linspace(0, t - 1, min(t, candidates)).round().astype(int))]
    _, R, pivots = linalg.qr(W[:, spread], mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    r = int((diag > 1e-15 * diag[0]).sum())
    if r > r_max:
        return None, W
    B = np.ascontiguousarray(W[:, spread[pivots[:r]]])
    Q, R = np.linalg.qr(B)
    T = linalg.solve_triangular(R, Q.T @ W)
    if not (np.abs(B @ T - W) <= tol * W).all():          # NaN or inf fail too
        return None, W
    return B, T


def association(X, X2, W, YW, yKy, dof, xp):
    """beta and Var(beta), each t_b x m_b (trait-major, the output's row order), for rotated
    SNPs X (n' x m_b) and X2 = X o X, W (n' x t_b), YW = Y' o W and yKy (t_b,).  A SNP with no
    variation left gets beta 0, Var inf (p = 1)."""
    sKs = W.T @ X2
    sKy = YW.T @ X
    tested = sKs > 0
    safe = xp.where(tested, sKs, 1.0)
    beta = xp.where(tested, sKy / safe, 0.0)
    r2 = yKy[:, None] - sKy * beta
    var = xp.where(tested, r2 / dof / safe, xp.inf)
    return beta, var


def p_value_beyond(beta, se, p, dof: int) -> None:
    """Fill the p left NaN by ``gls_kernels.finish`` (F beyond the table) with
    ``special.fdtrc``."""
    beyond = np.isnan(p) & (se > 0)
    F = (beta[beyond] / se[beyond]) ** 2
    p[beyond] = special.fdtrc(1.0, dof, F)


@functools.lru_cache(maxsize=8)
def tail_table(dof: int):
    """(h, c0, c1, c2, c3, F_max): the cubic Hermite table of log P(F(1, dof) > F) in
    u = sqrt(F) / h, node by node (``f_tail`` explains it); above F_max ``special.fdtrc``.
    """
    h = 2.0 ** -9
    t = np.arange(0.0, 40.0 + h, h)
    tail = special.stdtr(dof, -t)
    t, tail = t[tail > 1e-290], tail[tail > 1e-290]
    g = np.log(2.0 * tail)
    log_density = (special.gammaln((dof + 1) / 2) - special.gammaln(dof / 2)
                   - 0.5 * np.log(dof * np.pi) - (dof + 1) / 2 * np.log1p(t * t / dof))
    slope = -np.exp(log_density - np.log(tail)) * h               # d log p / du, u = |t| / h
    g0, g1, s0, s1 = g[:-1], g[1:], slope[:-1], slope[1:]
    coef = np.stack([g0, s0, 3 * (g1 - g0) - 2 * s0 - s1, 2 * (g0 - g1) + s0 + s1], axis=1)
    c0, c1, c2, c3 = (np.ascontiguousarray(c) for c in coef.T)
    return h, c0, c1, c2, c3, float(t[-1] ** 2)


@functools.lru_cache(maxsize=8)
def pass_table(dof: int):
    """``tail_table(dof)`` for ``gls_kernels.finish``: (h, p0, c1, c2, c3, F_max), p0 the
    tail probability at each node (exp of the cubic's constant term)."""
    h, c0, c1, c2, c3, F_max = tail_table(dof)
    return h, np.exp(c0), c1, c2, c3, F_max


@functools.lru_cache(maxsize=8)
def f_tail(dof: int):
    """P(F(1, dof) > F) as a function of F, tabulated once per dof.

    F(1, dof) = T^2 with T Student's t on dof degrees of freedom, so p = 2 P(T > |t|),
    |t| = sqrt(F).  log p is smooth in |t|: a cubic Hermite interpolant of log p on a grid of
    step h = 2^-9 in |t| (values from ``special.stdtr``, slopes -f_T / P(T > t) from the t
    density) matches ``special.fdtrc`` to about 1e-12 relative wherever p > 1e-290; beyond
    the table's last node (|t| = 40, or where p <= 1e-290) ``special.fdtrc`` itself is used.
    """
    table = tail_table(dof)

    def sf(F):
        F = np.asarray(F, dtype=float)
        p = tail_p(F, table, np)
        beyond = np.isnan(p)
        if beyond.any():
            p[beyond] = special.fdtrc(1.0, dof, F[beyond])
        return p

    return sf


def tail_p(F, table, xp):
    """P(F(1, dof) > F) from ``tail_table(dof)``'s cubic (its coefficient arrays on ``xp``'s
    device), NaN where F > F_max (beyond the table: ``special.fdtrc`` there)."""
    h, c0, c1, c2, c3, F_max = table
    nodes = len(c0)
    u = xp.sqrt(F)
    u *= 1.0 / h
    xp.minimum(u, float(nodes), out=u)
    i = u.astype(xp.int64)
    xp.minimum(i, nodes - 1, out=i)
    u -= i
    xp.minimum(u, 1.0, out=u)
    p = c3.take(i)                                    # Horner: ((c3 u + c2) u + c1) u + c0
    for c in (c2, c1, c0):
        p *= u
        p += c.take(i)
    xp.exp(p, out=p)
    return xp.where(F > F_max, xp.nan, p)
