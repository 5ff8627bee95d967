"""What a fitted model predicts: baseline hazards, predicted and covariate-adjusted curves, and how well it predicts."""
