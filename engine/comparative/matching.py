"""Greedy nearest-neighbour matching on the propensity score, 1:k within a caliper on the logit
PS (Austin 2011: 0.2 standard deviations of the logit; CohortMethod's matchOnPs default).

Each round gives every target, in a random order, its nearest still-unused comparator within
the caliper; k rounds make 1:k matched sets (a target may end with fewer than k).  The unused
comparators nearest a value are found by union-find over the comparators sorted by logit PS:
O((n + k t) alpha(n)) after the sort.
"""
from __future__ import annotations

import numpy as np
from numba import njit


def match_on_ps(logit, treatment, ratio: int = 1, caliper: float = 0.2,
                seed: int = 0) -> np.ndarray:
    """Matched set of every person: the target's row index for a target and its comparators,
    -1 for the unmatched.

    logit : (n,) logit PS; treatment : (n,) 1 target / 0 comparator
    ratio : comparators per target (k of 1:k); caliper : in standard deviations of the logit
    PS (None: no caliper)
    """
    if not (isinstance(ratio, int | np.integer) and ratio >= 1):
        raise ValueError(f"ratio must be a positive integer, got {ratio!r}")
    if caliper is not None and not (isinstance(caliper, int | float | np.floating)
                                    and np.isfinite(caliper) and caliper > 0):
        raise ValueError(f"caliper must be a positive number of standard deviations of the "
                         f"logit PS (or None: no caliper), got {caliper!r}")
    logit = np.asarray(logit, np.float64)
    treatment = np.asarray(treatment).astype(bool)
    width = np.inf if caliper is None else float(caliper) * float(np.std(logit, ddof=1))
    targets = np.flatnonzero(treatment)
    targets = targets[np.random.default_rng(seed).permutation(targets.size)]
    comparators = np.flatnonzero(~treatment)
    comparators = comparators[np.argsort(logit[comparators], kind="stable")]
    owner = _greedy(logit[targets], logit[comparators], width, int(ratio))
    sets = np.full(logit.size, -1, np.int64)
    used = owner >= 0
    sets[comparators[used]] = targets[owner[used]]
    matched_targets = np.unique(sets[comparators[used]])
    sets[matched_targets] = matched_targets
    return sets


@njit(cache=True, nogil=True)
def _find(parent, i):
    """Root of i with path halving: the nearest unused position in parent's direction."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True, nogil=True)
def _greedy(target_logit, comp_logit, width, ratio):
    """owner[c] = index (in target order) of the target that took sorted comparator c, or -1."""
    m = comp_logit.size
    right = np.arange(m + 1)          # right[i]: nearest unused at or after i (m: none)
    left = np.arange(m + 1)           # left[i + 1]: nearest unused at or before i (0: none)
    owner = np.full(m, -1)
    for _ in range(ratio):
        for t in range(target_logit.size):
            x = target_logit[t]
            pos = np.searchsorted(comp_logit, x)
            a = _find(right, pos)
            b = _find(left, pos) - 1
            da = abs(comp_logit[a] - x) if a < m else np.inf
            db = abs(comp_logit[b] - x) if b >= 0 else np.inf
            best = a if da <= db else b
            if min(da, db) <= width:
                owner[best] = t
                right[best] = best + 1
                left[best + 1] = best
    return owner
