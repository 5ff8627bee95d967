"""The CPU's per-trait sums of ``heritability`` in one pass over each trait's squared rotated
values, allocating nothing (the NumPy form built several n' x t temporaries per slope
evaluation).

For trait j with d_jk = h2_j S_k + (1 - h2_j) and u_k = Y2_jk (row j of the trait-major
squares), ``sums`` gives r_j = sum_k u_k / d_jk and either (``value``) sum_k log d_jk, or
sum_k (S_k - 1) / d_jk and sum_k u_k (S_k - 1) / d_jk^2: what ``heritability.negative_loglik``
and ``heritability.slope`` need, for the traits given (all, or those whose root search goes on).
Each trait's sums are its own, so parts of the traits run on the cores' threads (``parts``).
"""
from __future__ import annotations

import math

from numba import njit


@njit(cache=True, nogil=True)
def sums(S, Y2, h2, traits, value, r, a, b):
    """Fill r, a, b (aligned with ``traits``, rows of Y2, t x n'; h2 too): r = sum u / d and,
    with ``value``, a = sum log d; else a = sum (S - 1) / d, b = sum u (S - 1) / d^2."""
    for i in range(traits.size):
        u, h = Y2[traits[i]], h2[i]
        r_i, a_i, b_i = 0.0, 0.0, 0.0
        if value:
            for k in range(S.shape[0]):
                d = h * S[k] + (1.0 - h)
                r_i += u[k] / d
                a_i += math.log(d)
        else:
            for k in range(S.shape[0]):
                w = 1.0 / (h * S[k] + (1.0 - h))
                e = (S[k] - 1.0) * w
                r_i += u[k] * w
                a_i += e
                b_i += u[k] * e * w
        r[i], a[i], b[i] = r_i, a_i, b_i
