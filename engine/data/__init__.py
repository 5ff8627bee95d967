"""Data: cohorts, validation, episodes and the formula front door."""
