"""Index arrays the GPU kernels need besides ModelData, found once on the host with NumPy.

Everything the CPU kernels find by walking pointers through the sorted rows (where a tie group
ends, which rows entered late, Efron's terms) is fixed by the layout and the weights, not by
beta, so it is computed here once, uploaded, and the device passes become gathers:

- flags: ModelData's flags plus GROUP_HEAD (first row of a block of tied times in a stratum:
  the tied events' sums restart there) and STRATUM_TAIL (last row of a stratum: the segments of
  the backward, suffix scans start there);
- group_end_of[i]: the last row of row i's tie group;
- late[i] (entry times): the position in start order up to which the rows of i's stratum have
  start >= stop[i], or -1 (the scan over start order is read there: Yang2022's risk set
  {start < t <= stop} as the difference of two scans, merged by searchsorted on the times);
- entered_after[k] (entry times): the first row of k's stratum with stop <= start[k], or -1
  (the risk sets that do not hold k: a suffix of its stratum);
- EventGroups: the tie groups holding events, their weights and counts, and Efron's terms
  (d terms (l/d, W/d) per group of d tied events, one term (0, W) for Breslow); they change only
  with the weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..modeldata import ModelData
from ..row_flags import EVENT, GROUP_END, GROUP_HEAD, HEAD, STRATUM_TAIL


@dataclass
class Layout:
    flags: np.ndarray            # (n,) uint8
    group_end_of: np.ndarray     # (n,) int64
    start_heads: np.ndarray | None    # (n,) uint8, HEAD at each stratum's first start-ordered row
    late: np.ndarray | None           # (n,) int64
    entered_after: np.ndarray | None  # (n,) int64


@dataclass
class EventGroups:
    ends: np.ndarray          # (G,) int64, last row of each tie group holding events
    term_group: np.ndarray    # (T,) int64, the group of each Efron term
    term_c: np.ndarray        # (T,) float64, l / d
    term_wt: np.ndarray       # (T,) float64, W / d (Efron, d > 1) or W
    term_heads: np.ndarray    # (T,) uint8, HEAD at each group's first term
    term_last: np.ndarray     # (G,) int64, each group's last term


def layout(md: ModelData) -> Layout:
    """The static index arrays of one ModelData (flags as built, before any weights)."""
    n = md.n
    flags = md.flags.copy()
    head = (flags & HEAD) != 0
    end = (flags & GROUP_END) != 0
    group_head = head.copy()
    group_head[1:] |= end[:-1]
    flags[group_head] |= GROUP_HEAD
    bounds = md.strata_bounds
    flags[bounds[1:] - 1] |= STRATUM_TAIL
    ends = np.flatnonzero(end)
    group_end_of = ends[np.searchsorted(ends, np.arange(n))].astype(np.int64)
    if md.start is None:
        return Layout(flags, group_end_of, None, None, None)

    stratum = np.repeat(np.arange(bounds.size - 1), np.diff(bounds))
    start_so = md.start[md.start_order]
    # one key for (stratum, -time) over starts and stops together, ascending in both orders
    values, rank = np.unique(np.concatenate((-start_so, -md.stop, -md.start)),
                             return_inverse=True)
    m = values.size + 1
    key_start = stratum * m + rank[:n]
    key_stop = stratum * m + rank[n:2 * n]
    key_entry = stratum * m + rank[2 * n:]
    lo, hi = bounds[stratum], bounds[stratum + 1]
    upto = np.searchsorted(key_start, key_stop, side="right")       # rows with start >= stop[i]
    late = np.where(upto > lo, upto - 1, -1).astype(np.int64)
    first = np.searchsorted(key_stop, key_entry, side="left")       # first stop <= start[k]
    entered_after = np.where(first < hi, first, -1).astype(np.int64)
    start_heads = np.zeros(n, np.uint8)
    start_heads[bounds[:-1]] = HEAD
    return Layout(flags, group_end_of, start_heads, late, entered_after)


def event_groups(flags: np.ndarray, weights: np.ndarray, efron: bool) -> EventGroups:
    """Tie groups with events and Efron's terms, for the current EVENT flags and weights."""
    ev = (flags & EVENT) != 0
    ends = np.flatnonzero(flags & GROUP_END)
    gid = np.searchsorted(ends, np.arange(flags.size))
    d = np.bincount(gid, weights=ev, minlength=ends.size)
    W = np.bincount(gid, weights=np.where(ev, weights, 0.0), minlength=ends.size)
    keep = d > 0
    ends, d, W = ends[keep].astype(np.int64), d[keep], W[keep]
    multi = efron & (d > 1)
    count = np.where(multi, d, 1).astype(np.int64)
    term_group = np.repeat(np.arange(ends.size), count)
    first = np.cumsum(count) - count
    ell = np.arange(term_group.size) - first[term_group]
    term_c = ell / d[term_group]
    term_wt = np.where(multi, W / np.maximum(d, 1), W)[term_group]
    term_heads = np.zeros(term_group.size, np.uint8)
    term_heads[first] = HEAD
    return EventGroups(ends, term_group, term_c, term_wt, term_heads, first + count - 1)
