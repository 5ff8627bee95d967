"""Sensitivity studies: variant grids on shared layouts, E-values, empirical calibration."""
