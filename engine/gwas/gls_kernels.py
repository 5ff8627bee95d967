"""The CPU's last step of ``gls.association`` and ``gls.tail_p`` fused: beta, SE and p of a
tile of (trait, SNP) pairs from its two GEMM outputs, written in place.

For every pair, with S_BR = sKs, b_B = sKy (``gls`` module docstring):
beta = b_B / S_BR, Var = (y'Ky - b_B beta) / (dof S_BR), SE = sqrt(Var), |t| = |beta| / SE
(F = t^2), and p from ``gls.pass_table``: in u = |t| / h, node k = floor(u) and f = u - k,
p = p_k exp(d) with p_k the tail at node k and d = ((c3 f + c2) f + c1) f the cubic's rise
of log p past the node (``gls.tail_table``'s cubic, the same interpolant as ``gls.f_tail``).
|d| stays below 0.1 (the steepest log p falls by less than 0.08 over a node), so exp(d) is
its Taylor series to d^10 (error below 3e-19): no call to exp.  Each trait row runs as two
branch-free loops, the first vectorised (AVX-512 divisions and square roots here), the second
scalar table reads and fused multiply-adds: 7.7 ns a pair on this machine, against 13.2 ns
for one loop with branches and a libm exp per pair.  A SNP with S_BR = 0 gets beta 0, SE inf,
p 1; where F exceeds the table (F > F_max) or is NaN, p is left NaN and
``gls.p_value_beyond`` fills it with ``special.fdtrc``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def finish(sKs, sKy, yKy, dof, h, p0, c1, c2, c3, F_max, beta, se, p):
    """beta, se, p (t_b x m_b views) of the pairs whose sKs, sKy (t_b x m_b) are given;
    yKy (t_b,).  Returns how many p were left NaN (F > F_max)."""
    nodes = p0.shape[0]
    u_max = math.sqrt(F_max) / h
    beyond = 0
    for j in range(sKs.shape[0]):
        s_row, y_row, yk = sKs[j], sKy[j], yKy[j]
        b_row, e_row, p_row = beta[j], se[j], p[j]
        for i in range(s_row.shape[0]):          # beta, SE and u = |t| / h (-1: untestable)
            s = s_row[i]
            b = y_row[i] / s
            sd = math.sqrt((yk - y_row[i] * b) / (dof * s))
            tested = s > 0
            b_row[i] = b if tested else 0.0
            e_row[i] = sd if tested else np.inf
            p_row[i] = abs(b) / sd / h if tested else -1.0
        for i in range(s_row.shape[0]):          # p = p_k exp(d)
            u = p_row[i]
            inside = u >= 0.0 and u <= u_max      # False for NaN
            v = u if inside else 0.0
            k = min(int(v), nodes - 1)
            f = min(v - k, 1.0)
            d = ((c3[k] * f + c2[k]) * f + c1[k]) * f
            e = 1.0 + d * (1.0 + d * (1.0 / 2 + d * (1.0 / 6 + d * (1.0 / 24 + d * (
                1.0 / 120 + d * (1.0 / 720 + d * (1.0 / 5040 + d * (1.0 / 40320 + d * (
                    1.0 / 362880 + d * (1.0 / 3628800))))))))))
            p_row[i] = p0[k] * e if inside else (1.0 if u < 0.0 else np.nan)
            beyond += 0 if inside or u < 0.0 else 1
    return beyond
