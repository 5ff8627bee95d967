"""Bayesian sparse regression for binary outcomes: the horseshoe probit Gibbs sampler of
Terenin, Dong & Draper (2019), with ``engine.sample`` as its verb and ``PosteriorResult`` as
its result. Imports only the engine's errors, parallel layer and (for input) its Cohort."""
from .result import PosteriorResult
from .sample import MODELS, sample

__all__ = ["MODELS", "PosteriorResult", "sample"]
