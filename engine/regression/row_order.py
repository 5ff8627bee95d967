"""The sorted layout's row order: by stratum, then time descending, ties in the caller's order.

np.lexsort((-time, strata)) took 0.2 s of the 10^6-row build.  Here the same permutation comes
from an LSD radix sort of the times' bit patterns (stable, 11-bit digits, a digit that all rows
share skipped) followed by a stable counting sort of the stratum codes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_BITS = 11


def stratum_time_order(time: np.ndarray, strata: np.ndarray | None) -> np.ndarray:
    """The permutation np.lexsort((-time, strata)) (int64), time finite.  ``strata`` None: one
    stratum; strata codes outside 0..n-1 fall back to np.lexsort."""
    time = np.ascontiguousarray(time, dtype=np.float64)
    # -t + 0.0 turns -0.0 into +0.0, so 0.0 and -0.0 tie as in lexsort
    keys = (-time + 0.0).view(np.uint64)
    order = _radix_order(keys)
    if strata is None:
        return order
    strata = np.asarray(strata, np.int64)
    if strata.size and (strata.min() < 0 or strata.max() >= strata.size):
        return np.lexsort((-time, strata))
    return _stable_by_code(order, strata)


@njit(cache=True, nogil=True)
def _radix_order(bits):
    """Stable ascending order of float64 bit patterns (IEEE order: negatives' bits flipped)."""
    n = bits.size
    sign = np.uint64(1) << np.uint64(63)
    keys = np.empty(n, np.uint64)
    for i in range(n):
        b = bits[i]
        keys[i] = ~b if b & sign else b | sign
    order = np.arange(n)
    keys2 = np.empty(n, np.uint64)
    order2 = np.empty(n, np.int64)
    width = 1 << _BITS
    mask = np.uint64(width - 1)
    count = np.empty(width + 1, np.int64)
    for shift in range(0, 64, _BITS):
        count[:] = 0
        sh = np.uint64(shift)
        for i in range(n):
            count[((keys[i] >> sh) & mask) + 1] += 1
        if count.max() == n:
            continue                   # every key has this digit: the order stands
        for d in range(width):
            count[d + 1] += count[d]
        for t in range(n):             # keys travel with the rows: read in sequence
            d = (keys[t] >> sh) & mask
            keys2[count[d]] = keys[t]
            order2[count[d]] = order[t]
            count[d] += 1
        keys, keys2 = keys2, keys
        order, order2 = order2, order
    return order


@njit(cache=True, nogil=True)
def _stable_by_code(order, codes):
    """``order`` stably regrouped by codes[order] ascending (codes in 0..n-1)."""
    n = order.size
    count = np.zeros(n + 1, np.int64)
    for i in range(n):
        count[codes[i] + 1] += 1
    for c in range(n):
        count[c + 1] += count[c]
    out = np.empty(n, np.int64)
    for t in range(n):
        i = order[t]
        out[count[codes[i]]] = i
        count[codes[i]] += 1
    return out
