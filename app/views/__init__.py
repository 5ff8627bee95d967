"""The app's views: each reads and writes the one Store (app/store.py)."""
