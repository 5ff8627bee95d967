"""survscan's Panel web app; serve it with ``panel serve app/main.py`` (or ``make run``)."""
