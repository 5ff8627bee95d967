"""Which variance a fit reports, its clusters, and the middle of the robust (sandwich) variance.

    V_robust = I^-1 (sum_c U_c U_c^T) I^-1,    U_c = sum of the weighted score residuals of the
                                              rows of cluster c,

Lin and Wei (1989, "The robust inference for the Cox proportional hazards model", JASA
84:1074-1078) for Cox (R's ``coxph(..., cluster = id)``: case weights are sampling weights),
Huber (1967) and White (1980) for logistic regression, a case's eras for the self-controlled
case series; Fine-Gray's is Fine and Gray's (1999) own sandwich, with the censoring term, as
cmprsk::crr.  No small-sample factor is applied (R's coxph applies none).

The default (``variance="auto"``) is robust where the model-based variance is known to be
wrong: non-integer case weights (inverse-probability weights are sampling weights, not
counts), a ``cluster`` given, Cox subjects with more than one event (recurrent events,
Andersen-Gill), logistic subjects with more than one row, and Fine-Gray (as crr).  Otherwise
(no or integer weights, one event per subject: (start, stop] rows split for time-varying
covariates included) the model-based variance is right and is shown.  The summary names which.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..core.errors import CohortError, DataWarning

VARIANCES = ("auto", "model", "robust")
# Bytes of cluster scores (8 per cluster per column) held at once; above it the middle matrix
# is summed block pair by block pair, recomputing the scores of the later block.
MEAT_MEMORY = 4e9


def cluster_codes(caller, fitted, cluster):
    """(codes, n_clusters, label): the cluster of every row of the fitted cohort (after cut
    points), as codes 0..C-1.  Default: the subject ``id`` (SCCS: the case), else each row."""
    if cluster is None:
        if fitted.id is None:
            return np.arange(fitted.n), fitted.n, "row"
        codes, uniques = pd.factorize(np.asarray(fitted.id))
        return codes.astype(np.int64), len(uniques), "id"
    if cluster.size != caller.n:
        raise ValueError(f"cluster has {cluster.size} values but the cohort has {caller.n} rows: "
                         "give one value per row of the cohort as fitted (after rows dropped "
                         "for missing values).")
    if fitted.n != caller.n:               # split at cut points: episodes carry the row's id
        cluster = _per_episode(caller, fitted, cluster)
    codes, uniques = pd.factorize(cluster)
    if caller.id is not None and len(uniques) == cluster.size and \
            len(pd.unique(np.asarray(caller.id))) < caller.n:
        warnings.warn("every cluster is a single row while subject ids repeat: the episodes of "
                      "one subject are treated as independent. Pass cluster=None to cluster by "
                      "id.", DataWarning, stacklevel=4)
    return codes.astype(np.int64), len(uniques), "cluster"


def _per_episode(caller, fitted, cluster):
    ids = np.asarray(fitted.id)
    if caller.id is None:                  # the episodes' ids are the caller's row numbers
        return cluster[ids]
    by_id = pd.Series(cluster).groupby(pd.factorize(np.asarray(caller.id))[0]).nunique()
    if (by_id > 1).any():
        raise ValueError("with cut_points the cluster must be constant within each subject id "
                         "(clusters hold subjects, e.g. sites); it varies within "
                         f"{int((by_id > 1).sum())} id(s). Fit without cut_points or fix the "
                         "cluster column.")
    lookup = dict(zip(np.asarray(caller.id).tolist(), cluster.tolist()))
    return np.array([lookup[i] for i in ids.tolist()])


def choose(requested, model, cohort, cluster, codes, n_clusters):
    """"model" or "robust": ``requested`` unless it is "auto" (see the module docstring)."""
    if requested != "auto":
        return requested
    if model == "fine_gray" or cluster is not None:
        return "robust"
    w = getattr(cohort, "weights", None)
    if w is not None and np.any(np.asarray(w) != np.round(np.asarray(w))):
        return "robust"
    if model == "cox" and n_clusters < cohort.n:
        events = np.bincount(codes, np.asarray(cohort.event) > 0, n_clusters)
        return "robust" if events.max() > 1 else "model"
    if model == "logistic" and n_clusters < cohort.n:
        return "robust"
    return "model"


def check_clusters(codes, n_clusters, weights, n_cols):
    """A robust variance needs several clusters carrying weight: one cluster (or all weight on
    one) gives a zero middle; fewer clusters than coefficients a singular one."""
    w = np.ones(codes.size) if weights is None else np.asarray(weights, np.float64)
    mass = np.bincount(codes, w, n_clusters)
    live = int((mass > 0).sum())
    if live < 2:
        raise CohortError(f"the robust variance needs at least 2 clusters with positive weight; "
                          f"there is {live}. Cluster by a finer column (e.g. the subject id), or "
                          "fit with variance='model'.")
    if live <= n_cols:
        warnings.warn(f"the robust variance has {live} clusters for {n_cols} coefficients: its "
                      "middle matrix is singular and the standard errors are unreliable. Use "
                      "more clusters or variance='model'.", DataWarning, stacklevel=5)
    top = mass.max() / mass.sum()
    if top > 0.5:
        warnings.warn(f"one cluster carries {top:.0%} of the total weight: the robust variance "
                      "rests on it. Check the weights (truncate extreme ones) or the cluster "
                      "column.", DataWarning, stacklevel=5)


def middle(scores, n_cols, n_clusters):
    """sum_c U_c U_c^T over ``n_cols`` columns from ``scores(lo, hi)``, the (hi - lo,
    n_clusters) cluster scores of columns lo..hi-1 (dense or sparse).  Block pairs when all
    the scores would not fit in MEAT_MEMORY."""
    width = max(1, int(MEAT_MEMORY // (16 * max(n_clusters, 1))))
    if width >= n_cols:
        return _gram(scores(0, n_cols), None)
    out = np.empty((n_cols, n_cols))
    edges = list(range(0, n_cols, width)) + [n_cols]
    for a in range(len(edges) - 1):
        Ua = scores(edges[a], edges[a + 1])
        sa = slice(edges[a], edges[a + 1])
        out[sa, sa] = _gram(Ua, None)
        for b in range(a + 1, len(edges) - 1):
            sb = slice(edges[b], edges[b + 1])
            out[sa, sb] = _gram(Ua, scores(edges[b], edges[b + 1]))
            out[sb, sa] = out[sa, sb].T
    return out


def _gram(A, B):
    """A B' (A A' when B is None) on the host, from dense or sparse scores, on the host or on
    the device (a GPU backend's scores stay there: only the product comes back)."""
    product = A @ (A if B is None else B).T
    if hasattr(product, "toarray"):
        product = product.toarray()
    return np.asarray(product.get() if hasattr(product, "get") else product, np.float64)
