"""The Bayesian page: the horseshoe probit sampler, its state, script, view and plots."""
