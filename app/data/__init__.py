"""The session's Store (data, roles, and the survival workbench's design, options and kept fits),
how data are loaded, recoded and checked, the fit jobs and the analysis spec; the Data page."""
