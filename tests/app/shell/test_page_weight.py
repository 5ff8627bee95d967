"""The first page leaves out Bokeh's WebGL bundle (app/shell/page_weight.py): safe only while no
figure of the app asks for WebGL, which in Bokeh and HoloViews is always the word "webgl"
in quotes or as an attribute (``output_backend="webgl"``, a renderer's ``webgl = True``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("panel")

from app.shell.page_weight import without_webgl  # noqa: E402

APP = Path(__file__).resolve().parents[3] / "app"


def test_no_figure_of_the_app_asks_for_webgl():
    asks = re.compile(r"""["']webgl["']|\.webgl\b""", re.IGNORECASE)
    asking = [str(p.relative_to(APP)) for p in APP.rglob("*.py")
              if p.name != "page_weight.py" and asks.search(p.read_text())]
    assert asking == []


def test_resources_made_after_without_webgl_leave_the_bundle_out(monkeypatch):
    from bokeh.resources import Resources

    monkeypatch.setattr(Resources, "_default_components", list(Resources._default_components))
    without_webgl()  # on the copy, which monkeypatch puts back
    components = Resources(mode="server").components
    assert "bokeh-gl" not in components
    assert {"bokeh", "bokeh-widgets", "bokeh-tables"} <= set(components)
