"""The comparative new-user design's tools, apart from the OMOP queries of engine.cdm:
large-scale propensity scores (ps), matching on them (matching) and covariate balance
(balance)."""
from .balance import balance_summary, covariate_balance, matched_weights, stratum_weights
from .matching import match_on_ps
from .ps import fit_propensity, preference_score, stratify

__all__ = ["balance_summary", "covariate_balance", "fit_propensity", "match_on_ps",
           "matched_weights", "preference_score", "stratify", "stratum_weights"]
