"""survscan's engine: validated cohorts and Cox-family regression by scans, on CPU or GPU.

The public surface is what this module exports (docs/architecture.md draws the floors beneath
it).  ``engine.cdm`` (OMOP on DuckDB) and ``engine.comparative`` are sub-packages imported on
first use, so ``import engine`` loads neither DuckDB nor lifelines.
"""
import importlib

from . import bayes, datasets, device
from .autocorrelation import autocorrelation
from .bayes import PosteriorResult, sample
from .bootstrap import BootstrapResult, bootstrap
from .cohort import Cohort
from .concordance import concordance
from .cross_validation import CrossValidationResult, cross_validate
from .cumulative_incidence import cumulative_incidence
from .errors import Cancelled, CohortError, ConvergenceWarning, DataWarning, MonotoneLikelihoodWarning
from .fit import fit, fit_problem, gradient, loglik
from .global_tests import global_tests
from .gray_test import gray_test
from .kaplan_meier import KaplanMeier, kaplan_meier
from .logrank import LogrankResult, logrank_test
from .lr_test import lr_test
from .memory import fit_memory
from .options import (BACKENDS, CENSORING_TIES, MODELS, PRECISIONS, SOLVERS, TIES, TV_ROUTES,
                      FitOptions)
from .path import PathResult, lambda_max, path
from .per_sd import per_sd
from .ph_smooth import ph_smooth
from .ph_test import information, information_at, ph_test, scaled_schoenfeld
from .priors import L1, L2
from .probit_mle import ProbitMLE, probit_mle
from .problem import Problem
from .residuals import residuals
from .result import FitResult
from .sccs_data import SccsData
from .sccs_time_to_event import sccs_time_to_event
from .simulate import simulate
from .simulate_sccs import simulate_sccs
from .table_one import TableOne, table_one

_LAZY = {"cdm": ".cdm", "comparative": ".comparative"}


def __getattr__(name):
    """Sub-packages with heavy imports (DuckDB, lifelines), loaded on first use."""
    if name in _LAZY:
        return importlib.import_module(_LAZY[name], __name__)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")


__all__ = [
    "BACKENDS", "BootstrapResult", "CENSORING_TIES", "Cancelled", "Cohort", "CohortError",
    "ConvergenceWarning",
    "CrossValidationResult", "DataWarning", "FitOptions", "FitResult", "KaplanMeier", "L1",
    "L2", "LogrankResult", "MODELS", "MonotoneLikelihoodWarning", "PRECISIONS", "PathResult",
    "PosteriorResult", "Problem", "ProbitMLE", "SOLVERS", "SccsData", "TIES", "TV_ROUTES",
    "TableOne", "autocorrelation", "bayes", "bootstrap", "cdm", "comparative", "concordance",
    "cross_validate", "cumulative_incidence", "datasets", "device", "fit", "fit_memory",
    "fit_problem", "global_tests", "gradient", "gray_test", "information", "information_at",
    "kaplan_meier", "lambda_max", "loglik", "logrank_test", "lr_test", "path", "per_sd",
    "ph_smooth", "ph_test", "probit_mle", "residuals", "sample", "scaled_schoenfeld",
    "sccs_time_to_event", "simulate", "simulate_sccs", "table_one",
]
