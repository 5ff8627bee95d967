"""The Timing page: backends and lifelines timed on the loaded data."""
