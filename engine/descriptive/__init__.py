"""Before a model: Kaplan-Meier curves, log-rank tests, cumulative incidence, Gray's test, incidence
rates and Table 1."""
