"""The Sensitivity page: a grid of analysis variants fitted together (engine.sensitivity_study)."""
