"""The shell every page is built in: the job runner, lazy tabs, redraws while shown, widget
helpers, the shared plots and figures, job slots, configuration and the served page's weight.
Knows no page."""
