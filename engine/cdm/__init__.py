"""OMOP CDM studies on DuckDB: open a CDM, build a comparative new-user cohort, extract baseline
covariates, and run the propensity-score adjusted study (CohortMethod's design); or a
self-controlled case series study (sccs_study)."""
from .cohort import new_user_cohort
from .connect import cache_dir, open_cdm, open_eunomia
from .covariates import Covariates, baseline_covariates
from .kaplan_meier import kaplan_meier_by_arm
from .sccs import SccsStudyResult, sccs_study
from .study import STUDY_STEPS, StudyResult, run_study

__all__ = ["Covariates", "STUDY_STEPS", "StudyResult", "baseline_covariates", "cache_dir",
           "kaplan_meier_by_arm", "new_user_cohort", "open_cdm", "open_eunomia", "run_study",
           "SccsStudyResult", "sccs_study"]
