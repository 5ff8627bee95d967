"""The CPU's per-trait sums of ``heritability`` in one pass over the squared rotated traits,
allocating nothing (the NumPy form built several n' x t temporaries per slope evaluation).

For trait j with d_jk = h2_j S_k + (1 - h2_j) and u_kj = UY2_kj, ``sums`` gives
r_j = sum_k u_kj / d_jk and either (``value``) sum_k log d_jk, or sum_k (S_k - 1) / d_jk and
sum_k u_kj (S_k - 1) / d_jk^2: what ``heritability.negative_loglik`` and ``heritability.slope``
need, for the traits given (all, or those whose root search goes on).  Traits are visited in
tiles whose accumulators stay in L1 while the k rows stream by; each trait's sums are its own,
so two halves of the traits run on two threads (``halves``).
"""
from __future__ import annotations

import math

from numba import njit

_TILE = 512


@njit(cache=True, nogil=True)
def sums(S, UY2, h2, traits, value, r, a, b):
    """Fill r, a, b at the positions of ``traits`` (columns of UY2, n' x t; h2 aligned with
    them): r = sum u / d and, with ``value``, a = sum log d; else a = sum (S - 1) / d,
    b = sum u (S - 1) / d^2."""
    for start in range(0, traits.size, _TILE):
        stop = min(start + _TILE, traits.size)
        for i in range(start, stop):
            r[i], a[i], b[i] = 0.0, 0.0, 0.0
        for k in range(S.shape[0]):
            s = S[k]
            if value:
                for i in range(start, stop):
                    d = s * h2[i] + (1.0 - h2[i])
                    r[i] += UY2[k, traits[i]] / d
                    a[i] += math.log(d)
            else:
                for i in range(start, stop):
                    u = UY2[k, traits[i]]
                    w = 1.0 / (s * h2[i] + (1.0 - h2[i]))
                    e = (s - 1.0) * w
                    r[i] += u * w
                    a[i] += e
                    b[i] += u * e * w
