"""The engine's leaves: errors, devices, parallel runs, argument checks, shared result types."""
