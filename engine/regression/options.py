"""The options of a fit, declared once and checked once.

The public tuples (``MODELS``, ``TIES``, ``SOLVERS``, ``BACKENDS``, ``PRECISIONS``,
``CENSORING_TIES``, ``TV_ROUTES``, ``VARIANCES``) are what the engine accepts; ``engine``
exports them and the app builds its selectors from them. ``FitOptions`` is frozen: a Problem and
every fit made from it share one.

Every regression verb (``fit``, ``cross_validate``, ``bootstrap``, ``path``, ``lambda_max``,
``loglik``, ``gradient``) takes the fields as keyword arguments and builds its FitOptions with
``fit_options``, so a field added here reaches all of them; a name that is not a field is
refused there, naming the fields.
"""
from __future__ import annotations

import difflib
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np

from ..core.arguments import check_max_iter
from .backends import DEVICES
from ..data.censoring import CENSORING_TIES
from ..data.validation import check_cluster
from .variance import VARIANCES
from .solvers import SOLVERS

MODELS = ("cox", "fine_gray", "logistic", "poisson", "sccs")
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
    cut_points : None | dict, covariate -> cut times: a step-function effect, one coefficient
        per interval named ``treat[0,10)``, ``treat[10,inf)`` (engine.episodes; Cox only)
    bands : None | increasing positive follow-up times (Poisson only): follow-up split there,
        one baseline rate per band (the piecewise-exponential model), the unpenalised
        columns "follow-up (a, b]", ..., "follow-up > b" beside the first band's intercept
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
    censoring_ties: str = "crr"
    cut_points: dict | None = field(default=None, hash=False)
    bands: tuple | None = None
    variance: str = "auto"
    cluster: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        _one_of("model", self.model, MODELS, f"survscan fits {MODELS} so far")
        _one_of("ties", self.ties, TIES)
        _one_of("backend", self.backend, BACKENDS)
        _one_of("solver", self.solver, SOLVERS)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("tv_route", self.tv_route, TV_ROUTES)
        _one_of("censoring_ties", self.censoring_ties, CENSORING_TIES,
                "cmprsk::crr's rule or R survival finegray()'s")
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
        self._check_cut_points()
        self._check_bands()
        if self.model == "poisson" and self.tv_route == "strata":
            raise ValueError("tv_route='strata' makes each interval a stratum, which Poisson "
                             "regression does not take; use tv_route='counting' (or 'auto').")
        if self.precision == "float32":
            if self.model != "cox":
                raise ValueError(f"precision={self.precision!r} is available for model='cox' on "
                                 "the GPU only; use precision='float64'.")
            object.__setattr__(self, "tol", max(float(self.tol), FLOAT32_TOL))

    def _check_cut_points(self):
        """A mapping of covariate names (the cohort checks them and the times), for survival
        episodes; empty means none."""
        cuts = self.cut_points
        if cuts is None:
            return
        if not isinstance(cuts, Mapping):
            raise ValueError(f"cut_points must be a dict, covariate -> cut times, got "
                             f"{type(cuts).__name__}: e.g. cut_points={{'treat': [10]}}.")
        if not cuts:
            object.__setattr__(self, "cut_points", None)
            return
        if self.model in ("logistic", "sccs", "fine_gray"):
            why = {"logistic": "logistic regression has none",
                   "sccs": "SCCS eras are cut by SccsData.from_cases (risk_windows=, "
                           "age_cuts=)",
                   "fine_gray": "Fine-Gray (one row per subject) takes no counting-process "
                                "episodes; fit model='cox' for them"}[self.model]
            raise ValueError(f"cut_points split survival episodes; {why}. Fit without "
                             "cut_points.")
        object.__setattr__(self, "cut_points", dict(cuts))

    def _check_bands(self):
        """Increasing positive finite follow-up times, for a Poisson model; empty means
        none."""
        if self.bands is None:
            return
        try:
            bands = np.asarray(self.bands, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ValueError(f"bands must be follow-up times, e.g. bands=[20, 40], got "
                             f"{self.bands!r}") from None
        if bands.size == 0:
            object.__setattr__(self, "bands", None)
            return
        if not (np.all(np.isfinite(bands)) and np.all(bands > 0) and np.all(np.diff(bands) > 0)):
            raise ValueError(f"bands must be increasing positive finite follow-up times, e.g. "
                             f"bands=[20, 40], got {bands.tolist()}")
        if self.model != "poisson":
            raise ValueError(f"bands give a Poisson regression one baseline rate per follow-up "
                             f"band; model={self.model!r} has none (a Cox model's baseline is "
                             "free already). Fit model='poisson', or leave bands out.")
        object.__setattr__(self, "bands", tuple(bands.tolist()))


FIELDS = tuple(f.name for f in fields(FitOptions))


def fit_options(verb: str, model: str, options: dict) -> FitOptions:
    """``FitOptions(model=model, **options)`` for the verb named ``verb``: a keyword that is
    not a field is refused with the fields (and the nearest one) named."""
    unknown = [k for k in options if k not in FIELDS]
    if unknown:
        name = unknown[0]
        near = difflib.get_close_matches(name, FIELDS, n=1)
        hint = f" Did you mean {near[0]!r}?" if near and near[0] != name else ""
        raise TypeError(f"{verb}() got an unexpected keyword argument {name!r}.{hint} Its fit "
                        f"options are the fields of engine.FitOptions: {', '.join(FIELDS)}.")
    return FitOptions(model=model, **options)


def _one_of(name, value, allowed, why=""):
    if not (isinstance(value, str) and value in allowed):
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}"
                         + (f"; {why}." if why else "."))
