"""OMOP CDM studies on DuckDB: open a CDM, build a comparative new-user cohort, extract baseline
covariates, and run the propensity-score adjusted study (CohortMethod's design)."""
from .cohort import new_user_cohort
from .connect import cache_dir, open_cdm, open_eunomia

__all__ = ["cache_dir", "new_user_cohort", "open_cdm", "open_eunomia"]
