"""Regression: options, problems, fits and what they report (the family the lead is gathering)."""
