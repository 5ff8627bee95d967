"""What comes after a fit: the proportional-hazards check and smooth, residuals, concordance, global and likelihood-ratio tests, coefficients per SD."""
