"""survscan's engine: validated cohorts and Cox-family regression by scans, on CPU or GPU.

The public surface is small (see ../shared/docs/design.md, "Public API"); everything else lives
in private-by-convention modules: modeldata (sorted layout), backends (kernels), models
(likelihoods), solvers (CCD, Newton) and priors (penalties).
"""
from . import cdm, datasets
from .bootstrap import bootstrap
from .cohort import Cohort
from .cross_validation import CrossValidationResult, cross_validate
from .cumulative_incidence import cumulative_incidence
from .errors import Cancelled, CohortError, ConvergenceWarning, DataWarning, MonotoneLikelihoodWarning
from .fit import fit, gradient, loglik
from .kaplan_meier import KaplanMeier, kaplan_meier
from .logrank import LogrankResult, logrank_test
from .ph_test import ph_test, scaled_schoenfeld
from .priors import L1, L2
from .result import FitResult
from .simulate import simulate
from .table_one import TableOne, table_one

__all__ = [
    "Cancelled", "CrossValidationResult", "bootstrap", "cdm", "cross_validate",
    "cumulative_incidence", "Cohort", "CohortError", "ConvergenceWarning", "DataWarning",
    "FitResult", "KaplanMeier", "L1", "L2", "LogrankResult", "MonotoneLikelihoodWarning",
    "datasets", "fit", "gradient", "kaplan_meier", "loglik", "logrank_test", "ph_test",
    "scaled_schoenfeld", "simulate", "TableOne", "table_one",
]
