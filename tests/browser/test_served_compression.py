"""The served app's HTTP responses, without a browser: the page asks for the scripts it needs and
not MathJax's or WebGL's (app/shell/page_weight.py); they come gzipped, the same bytes to every visitor
(app/serve.py keeps a static file's compressed bytes), and they unpack to the file itself."""

from __future__ import annotations

import gzip
import re
import urllib.request

import pytest

pytestmark = pytest.mark.browser  # the served app of the browser tests (conftest.app_url)


def get(url: str, gzipped: bool) -> tuple[dict, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzipped else {})
    with urllib.request.urlopen(request, timeout=120) as response:
        return dict(response.headers), response.read()


def test_static_scripts_are_gzipped_once_and_unpack_to_the_file(app_url):
    _, page = get(app_url, gzipped=False)
    base = app_url.rsplit("/", 1)[0]
    scripts = re.findall(r'src="(?:\.\./|/)?(static/[^"]+\.js[^"]*)"', page.decode())
    assert len(scripts) >= 3, page[:2000]
    for path in scripts[:3]:
        url = f"{base}/{path}"
        plain_headers, plain = get(url, gzipped=False)
        first_headers, first = get(url, gzipped=True)
        again_headers, again = get(url, gzipped=True)
        assert "Content-Encoding" not in plain_headers
        assert first_headers["Content-Encoding"] == again_headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in again_headers["Vary"]
        assert int(again_headers["Content-Length"]) == len(again) == len(first) < len(plain)
        assert again == first
        assert gzip.decompress(again) == plain


def test_the_page_asks_for_bokeh_and_its_widgets_but_not_webgl_or_mathjax(app_url):
    _, page = get(app_url, gzipped=False)
    scripts = re.findall(r'src="([^"]+\.js)[^"]*"', page.decode())
    names = {path.rsplit("/", 1)[-1] for path in scripts}
    assert {"bokeh.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js",
            "panel.min.js"} <= names, names
    assert not any("bokeh-gl" in name or "mathjax" in name for name in names), names
