"""After a fit: baseline hazards, predicted and adjusted curves, and how well a model predicts."""
