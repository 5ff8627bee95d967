"""Sensitivity studies: grids of analysis variants fitted together, E-values, empirical calibration."""
