"""Likelihoods, one per file; each asks a backend for its scans."""
