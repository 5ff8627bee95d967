"""The comparative new-user design's tools, apart from the OMOP queries of engine.cdm:
large-scale propensity scores (ps), matching on them (matching), covariate balance (balance),
and propensity-score weights on any cohort (propensity_weights, weighting, mean_differences)."""
from .balance import balance_summary, covariate_balance, matched_weights, stratum_weights
from .matching import match_on_ps
from .mean_differences import mean_differences
from .propensity_weights import PropensityWeights, propensity_weights
from .ps import fit_propensity, preference_score, stratify
from .weighting import ESTIMANDS, balancing_weights, effective_sample_size

__all__ = ["ESTIMANDS", "PropensityWeights", "balance_summary", "balancing_weights",
           "covariate_balance", "effective_sample_size", "fit_propensity", "match_on_ps",
           "matched_weights", "mean_differences", "preference_score", "propensity_weights",
           "stratify", "stratum_weights"]
