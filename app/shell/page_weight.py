"""What the browser downloads for the first page.

Panel adds Bokeh's MathJax bundle (1.8 MB of the 6.0 MB first page, issue 29) to every page
that holds a Markdown pane, in case the text has LaTeX. The app's Markdown never renders LaTeX
(user text is shown as text), so the bundle is left out; Bokeh's own test for TeX in plot
labels and titles still adds it where a plot asks for it.

Bokeh's WebGL bundle (bokeh-gl, 194 kB of script that every new browser parses and runs) is sent
with every page too, whether or not a plot asks for WebGL. The app's figures draw on a canvas
(``output_backend`` is never "webgl": tests/app/shell/test_page_weight.py reads the app's sources
for any request of it), so the bundle is left out of the pages this server sends.
"""

from __future__ import annotations

from bokeh.resources import Resources
from panel.io import resources


def without_mathjax() -> None:
    """Serve pages without MathJax unless a Bokeh model needs it (call once per process)."""
    resources._panel_use_mathjax = lambda roots: False


def without_webgl() -> None:
    """Serve pages without Bokeh's WebGL bundle (call once per process, before serving)."""
    Resources._default_components = [c for c in Resources._default_components
                                      if c != "bokeh-gl"]
