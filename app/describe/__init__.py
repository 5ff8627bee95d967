"""The Describe page: Table 1, Kaplan-Meier, log-rank, cumulative incidence and subgroups before a
model."""
