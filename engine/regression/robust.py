"""The middle of a fit's robust (sandwich) variance, sum_c U_c U_c^T, over chosen columns at the
fitted beta (engine.regression.variance says which clusters and why)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .problem import Problem
from .variance import check_clusters, middle


def robust_middle(problem: Problem, beta, cols) -> np.ndarray:
    """sum_c U_c U_c^T over the model columns ``cols``, U_c the cluster sums of the weighted
    score residuals: V = I^-1 middle I^-1.  A backend without score scans (the logistic and
    SCCS GPU ones) hands the work to a CPU twin of the problem at the same beta.  (Fine-Gray's sandwich, with its
    censoring term, is the model's own ``sandwich``.)"""
    model = problem.model
    cols = np.asarray(cols, np.int64)
    codes, n_clusters, _ = problem.clusters
    check_clusters(codes, n_clusters, getattr(problem.cohort, "weights", None), cols.size)
    if not hasattr(model.backend, "cluster_scores"):
        twin = Problem.from_cohort(problem.cohort, replace(problem.options, backend="cpu",
                                                           cluster=None))
        model = twin.model
    model.set_beta(np.asarray(beta, np.float64))
    return middle(lambda lo, hi: model.cluster_scores(cols[lo:hi], codes, n_clusters),
                  cols.size, n_clusters)
