"""The survival workbench's pages: Design, Fit and Results with its sections (PH check, adjusted
curves, prediction, terms, path, bootstrap)."""
