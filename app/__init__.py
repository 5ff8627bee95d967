"""survscan's Panel web app; serve it with ``make run`` (``python -m app.serve app/main.py``)."""
