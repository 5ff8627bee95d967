"""The CPU's last step of ``gls.association`` and ``gls.tail_p`` fused: beta, SE and p of a
tile of (trait, SNP) pairs from its two GEMM outputs in one pass, written in place.

For every pair, with S_BR = sKs, b_B = sKy (``gls`` module docstring):
beta = b_B / S_BR, Var = (y'Ky - b_B beta) / (dof S_BR), SE = sqrt(Var), |t| = |beta| / SE
(F = t^2) and p = exp of ``gls.tail_table``'s cubic in u = |t| / h (the same Horner steps as
``gls.f_tail``); a SNP with S_BR = 0 gets beta 0, SE inf, p 1.  Where F exceeds the table
(F > F_max) p is left NaN and ``gls.p_value_beyond`` fills it with ``special.fdtrc``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def finish(sKs, sKy, yKy, dof, h, c0, c1, c2, c3, F_max, beta, se, p):
    """beta, se, p (t_b x m_b views) of the pairs whose sKs, sKy (t_b x m_b) are given;
    yKy (t_b,).  Returns how many p were left NaN (F > F_max)."""
    nodes = c0.shape[0]
    beyond = 0
    for j in range(sKs.shape[0]):
        for i in range(sKs.shape[1]):
            s = sKs[j, i]
            if not s > 0:
                beta[j, i], se[j, i], p[j, i] = 0.0, np.inf, 1.0
                continue
            b = sKy[j, i] / s
            sd = math.sqrt((yKy[j] - sKy[j, i] * b) / (dof * s))
            beta[j, i], se[j, i] = b, sd
            t = abs(b) / sd                                # |t| = sqrt(F)
            if t * t > F_max:
                p[j, i] = np.nan
                beyond += 1
                continue
            u = min(t * (1.0 / h), float(nodes))
            k = min(int(u), nodes - 1)
            u = min(u - k, 1.0)
            p[j, i] = math.exp(((c3[k] * u + c2[k]) * u + c1[k]) * u + c0[k])
    return beyond
