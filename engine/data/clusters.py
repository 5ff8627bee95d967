"""When a curve or test of a cohort needs the robust (clustered) variance, and its clusters.

R's survfit defaults to the robust variance when case weights are not whole numbers (inverse-
probability weights are sampling weights, not counts), a cluster is given, or a subject id has
more than one event; the clusters are then ``cluster``, else the subject id, else each row.
The curves and tests before a model (Kaplan-Meier, cumulative incidence, the log-rank test)
follow that rule.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .validation import check_cluster


def checked_cluster(cluster, n: int):
    """``cluster`` as an array of n values (or None), or a ValueError saying what is wrong."""
    cluster = check_cluster(cluster)
    if cluster is not None and cluster.size != n:
        raise ValueError(f"cluster has {cluster.size} values but the cohort has {n} rows: give "
                         "one value per row of the cohort.")
    return cluster


def robust_by_default(cohort, cluster) -> bool:
    """R survfit's default: a cluster, case weights that are not whole numbers, or a subject
    id with more than one event."""
    if cluster is not None:
        return True
    w = cohort.weights
    if w is not None and np.any(np.asarray(w) != np.floor(np.asarray(w))):
        return True
    if cohort.id is None:
        return False
    ids = pd.factorize(np.asarray(cohort.id))[0]
    return bool(np.bincount(ids, np.asarray(cohort.event) > 0).max() > 1)


def robust_clusters(n: int, ids, cluster) -> tuple:
    """(codes, what): each of the n rows' cluster code, ``cluster`` else the subject ``ids``
    else the row, and what a cluster is ("cluster", "id", "row")."""
    if cluster is not None:
        return pd.factorize(cluster)[0], "cluster"
    if ids is not None:
        return pd.factorize(np.asarray(ids))[0], "id"
    return np.arange(n), "row"


def robust_choice(cohort, variance: str, cluster, plain: str) -> tuple:
    """(cluster codes, what a cluster is) when ``variance`` ("auto", ``plain`` (the
    model-based one's name) or "robust") asks for the robust variance, else (None, None);
    a ValueError for an unknown variance, a bad ``cluster``, or a cluster with ``plain``."""
    choices = ("auto", plain, "robust")
    if variance not in choices:
        raise ValueError(f"variance must be one of {choices}, got {variance!r}")
    cluster = checked_cluster(cluster, cohort.n)
    if cluster is not None and variance == plain:
        raise ValueError("cluster= asks for the robust variance; drop it, or pass "
                         "variance='robust' (or 'auto').")
    if variance == plain or (variance == "auto" and not robust_by_default(cohort, cluster)):
        return None, None
    return robust_clusters(cohort.n, cohort.id, cluster)
