"""Before a model: Kaplan-Meier curves, log-rank tests, cumulative incidence, Gray's test and Table 1."""
