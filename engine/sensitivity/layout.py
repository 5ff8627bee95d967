"""Shared layouts: the variants that differ only in rows, follow-up end, columns or penalty are
case weights and fixed-at-zero columns on one sorted Problem.

A layout is fixed by what changes the sort or the columns: the stratification design, the cut
points and the ties.  Its cohort is split once at every end of follow-up in the grid, so that
censoring at t is a weight: the episode (start, t] keeps the row in every risk set up to t, and
the episodes after t get weight 0 (a row still at risk at t is then censored at t, exactly as
``variant.truncated``).  Subgroups are weights too: a zero-weight row leaves every risk set
and event, as if deleted (Problem.set_weights).  Each episode carries its parent row in ``id``,
which the Cox likelihood does not read, so cut-point episodes map back to the rows.
"""
from __future__ import annotations

import copy
import threading

import numpy as np
import pandas as pd

from ..regression.options import FitOptions
from ..regression.problem import Problem
from .variant import derived_cohort, recode, rows_of, truncated


def split_at_ends(cohort, ends):
    """The cohort split at every end of follow-up in ``ends`` (as R's survSplit: the event
    stays on the last piece); ``id`` holds each episode's parent row."""
    parent = np.arange(cohort.n)
    if not ends:
        return derived_cohort(cohort, id=parent)
    cuts = np.unique(np.asarray(ends, np.float64))
    start0 = np.zeros(cohort.n) if cohort.start is None else np.asarray(cohort.start)
    stop0 = np.asarray(cohort.time)
    first = np.searchsorted(cuts, start0, side="right")
    last = np.searchsorted(cuts, stop0, side="left")
    pieces = last - first + 1
    row = np.repeat(parent, pieces)
    k = np.arange(row.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    at = first[row] + k
    start = np.where(k == 0, start0[row], cuts[np.maximum(at - 1, 0)])
    stop = np.where(k == pieces[row] - 1, stop0[row], cuts[np.minimum(at, cuts.size - 1)])
    event = np.where(k == pieces[row] - 1, np.asarray(cohort.event)[row], 0)
    return derived_cohort(cohort, rows=row, time=stop, event=event, start=start, id=row)


class Layout:
    """One sorted Problem serving every variant of a (strata, cut points, ties) group."""

    def __init__(self, cohort, axes, key, base, of_interest):
        strata_label, cut_label, ties_label = key
        design = axes.value("strata", strata_label)
        self.cohort = cohort
        with_design = derived_cohort(cohort, strata=recode(design))
        ends = sorted({t for t in axes.choices["follow_up"].values() if t is not None})
        split = split_at_ends(with_design, ends)
        options = FitOptions(model="cox", ties=axes.value("ties", ties_label),
                             backend=base.get("backend", "cpu"),
                             solver=base.get("solver", "auto"), tol=base.get("tol", 1e-9),
                             max_iter=base.get("max_iter", 1000),
                             precision=base.get("precision", "float64"),
                             tv_route=base.get("tv_route", "auto"),
                             cut_points=axes.value("cut_points", cut_label))
        unpenalized = base.get("unpenalized", of_interest)
        self.problem = Problem.from_cohort(split, options, unpenalized)
        episodes = self.problem.cohort
        self.parent = np.asarray(episodes.id, np.int64)
        self.start = None if episodes.start is None else np.asarray(episodes.start)
        base_w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights)
        self.base_weights = base_w[self.parent]
        self.index = pd.Index(self.problem.names, name="covariate")  # every variant's
        self.aliased = {}   # (rows, unpenalised columns) -> their collinearity check
        self._rows = None   # the latest rows(): (key, n, events, weights)
        self._set = None    # the key whose weights the Problem holds
        self._taken = False
        self._lock = threading.Lock()

    def own(self) -> Layout:
        """This layout for one worker thread: itself for the first (a serial grid, a GPU grid:
        no second copy of anything), then twins on the same sorted rows and columns
        (``Problem.twin``) with weights and coefficients of their own; the collinearity checks
        stay shared (the same rows and columns give the same answer on every twin)."""
        with self._lock:
            first, self._taken = not self._taken, True
        if first:
            return self
        mine = copy.copy(self)
        mine.problem = self.problem.twin()
        mine._rows = mine._set = None
        return mine

    def rows(self, key, mask, follow_up) -> tuple[int, int, np.ndarray]:
        """(n, events, episode weights) of a subgroup censored at ``follow_up``; ``key`` names
        the pair.  The latest is kept: a group's variants come rows first (grid.AXES), so the
        adjustment sets and penalties on the same rows count and weigh them once."""
        if self._rows is None or self._rows[0] != key:
            cohort = self.cohort
            kept = rows_of(cohort, mask, follow_up)
            _, event = truncated(np.asarray(cohort.time)[kept], np.asarray(cohort.event)[kept],
                                 follow_up)
            self._rows = (key, int(kept.sum()), int(np.count_nonzero(event)),
                          self.weights(mask, follow_up))
        return self._rows[1:]

    def use_rows(self, key) -> None:
        """Give the Problem the weights of ``key`` (the latest ``rows``) unless it holds them:
        a new weight vector costs a gather of every row and the backend's state (13 ms at
        10^6 rows)."""
        if self._set != key:
            self.problem.set_weights(self._rows[3])
            self._set = key

    def start_item(self) -> None:
        """A new work item: its first variant sets the weights afresh, which also clears the
        backend's memory of earlier steps (the plane step's last direction), so an item's
        numbers do not depend on which thread fitted what on this layout before."""
        self._set = None

    def weights(self, mask, follow_up) -> np.ndarray:
        """The episode weights of a subgroup censored at ``follow_up``."""
        keep = rows_of(self.cohort, mask, None)[self.parent]
        if follow_up is not None:
            keep &= self.start < follow_up
        return np.where(keep, self.base_weights, 0.0)

    def columns(self, names) -> np.ndarray:
        """Which of the Problem's columns an adjustment set keeps (a split covariate keeps all
        its interval columns)."""
        kept = set(names)
        cut = self.problem.cut_points
        return np.array([n in kept or any(n.startswith(f"{c}[") and c in kept for c in cut)
                         for n in self.problem.names])


class Layouts:
    """The sorted layouts of a grid in one process: each built once, when a worker first asks
    for it, and lent to one worker thread at a time (the layout itself to the first, twins of
    it to the next ones, ``Layout.own``); freed once its last work item is fitted, so a
    serial grid holds one layout at a time (engine.sensitivity.budget counts so).  ``items``:
    layout key -> how many work items it has in this process (None: never freed, as in a
    process or a Dask worker that sees only some of them).  Rebuilt empty after pickling."""

    def __init__(self, items=None):
        self._items = items
        self.__setstate__({})

    def lend(self, key, build) -> Layout:
        """A layout of ``key`` no other thread holds; ``build()`` sorts it the first time."""
        with self._lock:
            entry = self._entries.setdefault(key, {"lock": threading.Lock(), "layout": None,
                                                   "free": [], "left": self._items.get(key)})
        with entry["lock"]:          # one sort; workers on other layouts do not wait
            if entry["layout"] is None:
                entry["layout"] = build()
            return entry["free"].pop() if entry["free"] else entry["layout"].own()

    def give_back(self, key, layout: Layout) -> None:
        """``layout`` is free again; after the last item of ``key`` every copy goes."""
        with self._lock:
            entry = self._entries[key]
            if entry["left"] is not None:
                entry["left"] -= 1
                if entry["left"] == 0:
                    del self._entries[key]
                    return
            entry["free"].append(layout)

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self._items = getattr(self, "_items", None) or {}
        self._entries, self._lock = {}, threading.Lock()
