"""The objects a served process keeps for good (the imported modules of NumPy, pandas, Bokeh,
Panel, HoloViews, Numba and the engine, about 400,000) set aside from the garbage collector
once, before the first session.

A full collection walks every tracked object with the GIL held: about 0.5 s here, every few
sessions, and the users arriving together wait for it. Frozen objects are still freed when
their reference count drops; only cycles among them would stay, and module-level objects do
not die.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_imports() -> None:
    """``gc.freeze()`` once per process (the app's script runs once per session)."""
    global _frozen
    if not _frozen:
        gc.collect()  # what is garbage now is freed, not kept for good
        gc.freeze()
        _frozen = True
