"""Saved analyses: named analyses in a session, the analysis file, reopening one (a refit) and the
autosave."""
