"""What a served process sets up once for all its sessions (the app's script runs once per
session): HoloViews' Bokeh backend (``hv.extension``, 36 ms each time), and the objects it
keeps for good (the imported modules of NumPy, pandas, Bokeh, Panel, HoloViews, Numba and the
engine, about 400,000) set aside from the garbage collector before the first session.

A full collection walks every tracked object with the GIL held: about 0.5 s here, every few
sessions, and the users arriving together wait for it. Frozen objects are still freed when
their reference count drops; only cycles among them would stay, and module-level objects do
not die.
"""

from __future__ import annotations

import gc

import holoviews as hv

_frozen = False
_holoviews_bokeh = False


def holoviews_bokeh() -> None:
    """HoloViews draws with Bokeh: ``hv.extension("bokeh")`` once per process."""
    global _holoviews_bokeh
    if not _holoviews_bokeh:
        hv.extension("bokeh")
        _holoviews_bokeh = True


def freeze_imports() -> None:
    """``gc.freeze()`` once per process (the app's script runs once per session)."""
    global _frozen
    if not _frozen:
        gc.collect()  # what is garbage now is freed, not kept for good
        gc.freeze()
        _frozen = True
