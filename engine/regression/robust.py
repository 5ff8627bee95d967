"""The two pieces of a fit's robust (sandwich) variance, I and sum_c U_c U_c^T, over chosen
columns at the fitted beta (engine.regression.variance says which clusters and why)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..problem import Problem
from .variance import check_clusters, middle


def robust_pieces(problem: Problem, beta, cols) -> tuple[np.ndarray, np.ndarray]:
    """(information, middle) over the model columns ``cols``: V = I^-1 middle I^-1.

    Fine-Gray answers with its own sandwich (censoring term included).  A backend without
    score scans (the GPU ones) hands the work to a CPU twin of the problem at the same beta.
    """
    model = problem.model
    cols = np.asarray(cols, np.int64)
    if problem.options.model == "fine_gray":
        return model.sandwich(cols)
    codes, n_clusters, _ = problem.clusters
    check_clusters(codes, n_clusters, getattr(problem.cohort, "weights", None), cols.size)
    if not hasattr(model.backend, "cluster_scores"):
        twin = Problem.from_cohort(problem.cohort, replace(problem.options, backend="cpu",
                                                           cluster=None))
        model = twin.model
        model.set_beta(np.asarray(beta, np.float64))
    info = model.information(cols)[2]
    return info, middle(lambda lo, hi: model.cluster_scores(cols[lo:hi], codes, n_clusters),
                        cols.size, n_clusters)

