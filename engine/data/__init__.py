"""Survival data before any model: the validated Cohort, its episodes and encodings, censoring weights, aliasing checks, grouping, risk-set counts, simulation and the bundled datasets."""
