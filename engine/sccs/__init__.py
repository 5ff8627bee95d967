"""Self-controlled case series data: eras validated once, eras from raw case histories, time to event and simulation (the likelihood is regression/models/sccs.py)."""
