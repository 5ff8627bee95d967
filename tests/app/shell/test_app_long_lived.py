"""The served process loads HoloViews' Bokeh backend and sets its long-lived objects aside from
the garbage collector once, not once per session (the app's script runs for every session)."""

from __future__ import annotations

import gc

from app.shell import long_lived


def test_freeze_imports_freezes_once(monkeypatch):
    monkeypatch.setattr(long_lived, "_frozen", False)
    before = gc.get_freeze_count()
    try:
        long_lived.freeze_imports()
        frozen = gc.get_freeze_count()
        assert frozen > before  # the objects alive now are out of the collector's reach
        later = [[k] for k in range(1000)]  # a session's objects, made after the first call
        long_lived.freeze_imports()
        # ... are not frozen by a second call (frozen objects freed meanwhile may lower it)
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_holoviews_bokeh_loads_the_backend_once(monkeypatch):
    import holoviews as hv

    calls = []
    monkeypatch.setattr(long_lived, "_holoviews_bokeh", False)
    monkeypatch.setattr(hv, "extension", lambda *backends: calls.append(backends))
    long_lived.holoviews_bokeh()
    long_lived.holoviews_bokeh()  # the next session's script
    assert calls == [("bokeh",)]
