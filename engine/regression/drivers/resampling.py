"""Subjects, folds and bootstrap counts: the randomness of cross-validation and the bootstrap.

Both resample *subjects* (``cohort.id`` when present, else rows), never episodes, and both turn
a resample into case weights on the rows of the one cohort: a held-out fold is weight 0, a
subject drawn c times is weight c.  The data are never copied and the sorted layout is reused
(``Problem.set_weights``).  Every draw comes from ``numpy.random.default_rng([seed, stream,
index])``: the fold assignment of repeat r and the counts of replicate b depend on nothing else.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..options import FitOptions
from ..problem import Problem
from ...core.parallel import WorkerCache

FOLDS, BOOTSTRAP = 0, 1   # random streams


def subjects(cohort, cluster=None) -> tuple[np.ndarray, int]:
    """Subject code (0..S-1) of every row, and S: of ``cluster`` (one value per row) when
    given, else of ``cohort.id``, else each row."""
    if cluster is not None:
        codes, uniques = pd.factorize(np.asarray(cluster))
        return codes.astype(np.int64), len(uniques)
    if cohort.id is None:
        return np.arange(cohort.n), cohort.n
    codes, uniques = pd.factorize(np.asarray(cohort.id))
    return codes.astype(np.int64), len(uniques)


def fold_of_rows(cohort, folds: int, seed: int, repeat: int) -> np.ndarray:
    """Fold (0..folds-1) of every row: subjects dealt round-robin in random order within
    strata, so every fold gets its share of every stratum of at least ``folds`` subjects and
    one subject's episodes are never split.  A subject's stratum is that of its first row."""
    codes, n_subjects = subjects(cohort)
    stratum = np.zeros(n_subjects, np.int64)
    if cohort.strata is not None:
        first = np.unique(codes, return_index=True)[1]
        stratum = np.asarray(cohort.strata, np.int64)[first]
    rng = np.random.default_rng([seed, FOLDS, repeat])
    order = np.lexsort((rng.permutation(n_subjects), stratum))
    fold = np.empty(n_subjects, np.int64)
    fold[order] = np.arange(n_subjects) % folds
    return fold[codes]


def bootstrap_counts(n_subjects: int, seed: int, replicate: int) -> np.ndarray:
    """How many times each subject is drawn in one bootstrap sample of n_subjects subjects."""
    rng = np.random.default_rng([seed, BOOTSTRAP, replicate])
    return rng.multinomial(n_subjects, np.full(n_subjects, 1.0 / n_subjects))


class WeightedRefits:
    """Base of the picklable CV and bootstrap tasks: the cohort, sorted once per worker thread
    into a model whose case weights change between fits.  Folds, subjects and weights are of
    ``problem().cohort``: the caller's rows, or their episodes when the options cut them."""

    def __init__(self, cohort, options: FitOptions, unpenalized):
        self.cohort, self.options, self.unpenalized = cohort, options, list(unpenalized)
        self.cache = WorkerCache()

    def problem(self) -> Problem:
        return self.cache.get("problem", lambda: Problem.from_cohort(
            self.cohort, self.options, self.unpenalized))

    def base_weights(self) -> np.ndarray:
        """The case weights of the problem's rows (the episodes, with cut points)."""
        c = self.problem().cohort
        return np.ones(c.n) if c.weights is None else np.asarray(c.weights, np.float64)
