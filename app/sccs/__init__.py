"""The SCCS page: self-controlled case series, its state, jobs, script, view and plots."""
