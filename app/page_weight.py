"""What the browser downloads for the first page.

Panel adds Bokeh's MathJax bundle (1.8 MB of the 6.0 MB first page, issue 29) to every page
that holds a Markdown pane, in case the text has LaTeX. The app's Markdown never renders LaTeX
(user text is shown as text), so the bundle is left out; Bokeh's own test for TeX in plot
labels and titles still adds it where a plot asks for it.
"""

from __future__ import annotations

from panel.io import resources


def without_mathjax() -> None:
    """Serve pages without MathJax unless a Bokeh model needs it (call once per process)."""
    resources._panel_use_mathjax = lambda roots: False
