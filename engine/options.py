"""The options of a fit, declared once and checked once.

The public tuples (``MODELS``, ``TIES``, ``SOLVERS``, ``BACKENDS``, ``PRECISIONS``,
``TV_ROUTES``, ``VARIANCES``) are what the engine accepts; ``engine`` exports them and the app
builds its selectors from them.  ``FitOptions`` is frozen: a Problem and every fit made from
it share one.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .arguments import check_max_iter
from .backends import DEVICES
from .regression.variance import VARIANCES, check_cluster
from .solvers import SOLVERS

MODELS = ("cox", "fine_gray", "logistic", "sccs")
TIES = ("breslow", "efron")
BACKENDS = DEVICES
PRECISIONS = ("float64", "float32")
TV_ROUTES = ("auto", "counting", "strata")
# Below this tolerance single precision cannot settle: float32 fits raise ``tol`` to it.
FLOAT32_TOL = 1e-6


@dataclass(frozen=True)
class FitOptions:
    """What ``engine.fit`` was asked, apart from the data and the penalty.

    model, ties, backend, solver, precision, tv_route : one of the public tuples
    tol : relative change of the objective that counts as converged, in (0, 1); raised to
        FLOAT32_TOL for precision="float32"
    max_iter : most CCD cycles or outer Newton steps, a positive integer
    cause : Fine-Gray's cause of interest; censoring_strata : Fine-Gray's censoring by stratum
    variance : "auto" | "model" | "robust": the variance the fit reports (both are kept; see
        engine.regression.variance for the "auto" rule)
    cluster : None (the subject ``id``, else each row) or one value per cohort row: the
        clusters of the robust variance (as R's ``cluster(site)``)
    """

    model: str = "cox"
    ties: str = "breslow"
    backend: str = "cpu"
    solver: str = "auto"
    precision: str = "float64"
    tol: float = 1e-9
    max_iter: int = 1000
    cause: int = 1
    censoring_strata: bool = False
    tv_route: str = "auto"
    variance: str = "auto"
    cluster: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        _one_of("model", self.model, MODELS, f"survscan fits {MODELS} so far")
        _one_of("ties", self.ties, TIES)
        _one_of("backend", self.backend, BACKENDS)
        _one_of("solver", self.solver, SOLVERS)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("tv_route", self.tv_route, TV_ROUTES)
        _one_of("variance", self.variance, VARIANCES)
        object.__setattr__(self, "cluster", check_cluster(self.cluster))
        if self.model == "fine_gray" and self.ties != "breslow":
            raise ValueError(f"Fine-Gray uses Breslow ties (as cmprsk::crr); got "
                             f"ties={self.ties!r}. Pass ties='breslow'.")
        if self.model == "fine_gray" and self.cluster is not None:
            raise ValueError("Fine-Gray's sandwich (as cmprsk::crr) treats each subject as its "
                             "own cluster; cluster= is not available for model='fine_gray'. "
                             "Fit without cluster.")
        if not (isinstance(self.tol, numbers.Real) and not isinstance(self.tol, bool)
                and 0 < self.tol < 1):
            raise ValueError(f"tol must be in (0, 1), got {self.tol!r}")
        check_max_iter(self.max_iter)
        if self.precision == "float32":
            if self.model != "cox":
                raise ValueError(f"precision={self.precision!r} is available for model='cox' on "
                                 "the GPU only; use precision='float64'.")
            object.__setattr__(self, "tol", max(float(self.tol), FLOAT32_TOL))


def _one_of(name, value, allowed, why=""):
    if not (isinstance(value, str) and value in allowed):
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}"
                         + (f"; {why}." if why else "."))
