"""Errors and warnings that survscan raises about its input data and its fits."""


class CohortError(ValueError):
    """Input data that cannot make a valid cohort.

    The message names the column, the first offending rows with their values, and the fix.
    """


class DataWarning(UserWarning):
    """Input data was usable but changed, e.g. constant or duplicate covariates were excluded."""


class ConvergenceWarning(UserWarning):
    """A fit stopped before reaching its tolerance."""


class MonotoneLikelihoodWarning(ConvergenceWarning):
    """A coefficient diverges: the likelihood keeps rising along it (monotone likelihood)."""


class Cancelled(Exception):
    """Cross-validation or the bootstrap was stopped through its ``cancel`` event."""
