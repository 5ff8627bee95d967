"""survscan's engine: validated cohorts and Cox-family regression by scans, on CPU or GPU.

The public surface is what this module exports; the folders beneath it are the floors of
docs/architecture.md (core, data, descriptive, regression, inference, and the families sccs,
bayes, gwas, comparative, cdm).  ``engine.cdm`` (OMOP on DuckDB) and ``engine.comparative`` are
sub-packages imported on first use, so ``import engine`` loads neither DuckDB nor lifelines.
"""
import importlib

from . import bayes
from .core import device
from .core.errors import (Cancelled, CohortError, ConvergenceWarning, DataWarning,
                          MonotoneLikelihoodWarning)
from .core.memory import available_bytes as available_memory, fit_memory
from .data import datasets
from .data.cohort import Cohort
from .data.lexis import split_lexis
from .data.simulate import simulate
from .descriptive.cumulative_incidence import cumulative_incidence
from .descriptive.gray_test import gray_test
from .descriptive.incidence_rates import IncidenceRates, incidence_rates
from .descriptive.kaplan_meier import KaplanMeier, kaplan_meier
from .descriptive.logrank import LogrankResult, logrank_test
from .descriptive.standard_populations import STANDARD_POPULATIONS, standard_population
from .descriptive.standardization import (StandardizedRates, StandardizedRatios, smr,
                                          standardized_rates)
from .descriptive.table_one import TableOne, table_one
from .regression.drivers.bootstrap import BootstrapResult, bootstrap
from .regression.drivers.cross_validation import CrossValidationResult, cross_validate
from .regression.drivers.path import PathResult, lambda_max, path
from .regression.fit import fit, fit_problem, gradient, loglik
from .regression.options import BACKENDS, MODELS, PRECISIONS, SOLVERS, TIES, TV_ROUTES, FitOptions
from .regression.peers import lifelines_fit, naive_loglik
from .regression.priors import L1, L2
from .regression.problem import Problem
from .regression.result import FitResult
from .inference.concordance import concordance
from .inference.functional_form import TermPlot, functional_form, term_plot
from .inference.global_tests import global_tests
from .inference.lr_test import lr_test
from .inference.per_sd import per_sd
from .inference.ph_check import PHCheck, ph_check
from .inference.ph_smooth import ph_smooth
from .inference.ph_test import (information, information_at, ph_test, scaled_schoenfeld,
                                schoenfeld)
from .inference.residuals import residuals
from .sccs.data import SccsData
from .sccs.simulate import simulate_sccs
from .sccs.time_to_event import sccs_time_to_event
from .bayes import PosteriorResult, sample
from .bayes.autocorrelation import autocorrelation
from .bayes.probit_mle import ProbitMLE, probit_mle
from .sensitivity.calibration import (EmpiricalNull, SystematicErrorModel, calibrate_ci,
                                      calibrate_p, error_model, fit_null,
                                      fit_systematic_error_model)
from .sensitivity.budget import check_budget, grid_cost_of_shape
from .sensitivity.evalue import evalues_hr
from .sensitivity.negative_controls import negative_control_estimates
from .sensitivity.study import SensitivityResult, sensitivity_study

from .inference.effect_curve import effect_curve
from .inference.wald import interaction_test, wald_test

from .core.statistical_result import TestResult

from .prediction.adjusted import AdjustedCurves, adjusted_curves
from .prediction.adjusted_rates import AdjustedRates, adjusted_rates
from .prediction.brier import brier_score, integrated_brier_score
from .prediction.calibration import calibration_table
from .prediction.performance import PredictivePerformance, predictive_performance
from .prediction.time_auc import time_dependent_auc
from .prediction.uno import uno_concordance

from .regression.options import VARIANCES
from .missing.imputation import Imputations, impute
from .missing.pooling import PooledResult, pool

from .regression.options import CENSORING_TIES

_LAZY = {"cdm": ".cdm", "comparative": ".comparative"}
# Names of the lazy sub-packages exported here too, loaded with their sub-package.
_LAZY_NAMES = {"PropensityWeights": ".comparative", "propensity_weights": ".comparative"}


def __getattr__(name):
    """Sub-packages with heavy imports (DuckDB, lifelines), loaded on first use."""
    if name in _LAZY:
        return importlib.import_module(_LAZY[name], __name__)
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name], __name__), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")


__all__ = [
    "AdjustedCurves", "AdjustedRates", "BACKENDS", "BootstrapResult", "CENSORING_TIES",
    "Cancelled", "Cohort",
    "CohortError", "ConvergenceWarning", "CrossValidationResult", "DataWarning",
    "EmpiricalNull", "FitOptions", "FitResult", "Imputations", "IncidenceRates", "KaplanMeier",
    "L1", "L2",
    "LogrankResult",
    "MODELS", "MonotoneLikelihoodWarning", "PHCheck", "PRECISIONS", "PathResult",
    "PooledResult", "PosteriorResult", "PredictivePerformance", "ProbitMLE", "Problem",
    "PropensityWeights",
    "SOLVERS", "STANDARD_POPULATIONS", "SccsData",
    "SensitivityResult", "StandardizedRates", "StandardizedRatios", "SystematicErrorModel",
    "TIES", "TV_ROUTES", "TableOne", "TermPlot",
    "TestResult",
    "VARIANCES", "adjusted_curves", "adjusted_rates", "autocorrelation", "available_memory",
    "bayes",
    "bootstrap", "brier_score",
    "calibrate_ci", "calibrate_p", "calibration_table", "cdm", "check_budget", "comparative",
    "concordance",
    "cross_validate", "cumulative_incidence", "datasets", "device", "effect_curve",
    "error_model", "evalues_hr", "fit", "fit_memory", "fit_null", "fit_problem",
    "fit_systematic_error_model", "functional_form", "global_tests", "gradient", "gray_test",
    "grid_cost_of_shape", "impute", "incidence_rates", "information",
    "information_at", "integrated_brier_score", "interaction_test", "kaplan_meier",
    "lambda_max", "lifelines_fit", "loglik", "logrank_test", "lr_test", "naive_loglik",
    "negative_control_estimates", "path", "per_sd", "ph_check", "ph_smooth", "ph_test", "pool",
    "predictive_performance", "probit_mle", "propensity_weights", "residuals", "sample",
    "scaled_schoenfeld", "schoenfeld", "sccs_time_to_event", "sensitivity_study", "simulate",
    "simulate_sccs", "smr", "split_lexis", "standard_population",
    "standardized_rates", "table_one", "term_plot",
    "time_dependent_auc", "uno_concordance", "wald_test",
]
