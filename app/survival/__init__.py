"""The survival workbench: its state (kept fits and last runs) and jobs, and its pages: Design,
Fit and Results with its sections (PH check, adjusted curves, prediction, terms, path,
bootstrap)."""
