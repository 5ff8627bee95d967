"""The options of a fit, declared once and checked once.

The public tuples (``MODELS``, ``TIES``, ``SOLVERS``, ``BACKENDS``, ``PRECISIONS``,
``CENSORING_TIES``, ``TV_ROUTES``) are what the engine accepts; ``engine`` exports them and
the app builds its selectors from them.  ``FitOptions`` is frozen: a Problem and every fit
made from it share one.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from .arguments import check_max_iter
from .backends import DEVICES
from .censoring import CENSORING_TIES
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
    censoring_ties : Fine-Gray's rule for censorings tied with events, one of CENSORING_TIES:
        "crr" (cmprsk::crr, the default) or "finegray" (R survival finegray(), Geskus 2011)
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
    censoring_ties: str = "crr"

    def __post_init__(self):
        _one_of("model", self.model, MODELS, f"survscan fits {MODELS} so far")
        _one_of("ties", self.ties, TIES)
        _one_of("backend", self.backend, BACKENDS)
        _one_of("solver", self.solver, SOLVERS)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("tv_route", self.tv_route, TV_ROUTES)
        _one_of("censoring_ties", self.censoring_ties, CENSORING_TIES,
                "cmprsk::crr's rule or R survival finegray()'s")
        if self.model == "fine_gray" and self.ties != "breslow":
            raise ValueError(f"Fine-Gray uses Breslow ties (as cmprsk::crr); got "
                             f"ties={self.ties!r}. Pass ties='breslow'.")
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
