"""The session's Store (data, roles, and the survival workbench's design and options), how data
are loaded, recoded and checked, and the analysis spec; the Data page."""
