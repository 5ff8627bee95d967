"""Warnings caught per thread, for jobs that run side by side in worker threads.

``warnings.catch_warnings`` swaps process-wide state (the filters and ``showwarning``), so two
jobs overlapping in threads lose or leak each other's warnings: the one leaving first restores
the state the other still relies on, and the last one restores a state that records forever.
Here one process-wide hook is set while any collector is open (entered by the first, left by
the last, under a lock) and hands each warning to the collector of the thread that raised it.
"""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager

_lock = threading.Lock()
_local = threading.local()
_state = {"open": 0, "context": None, "show": None}
# how a warning is shown where no collector is open.  Another thread's catch_warnings (the
# engine's formula parsing) that began while a collector was open restores this module's
# hook when it ends, after the last collector closed: the hook then outlives every collector
# (seen in the served app: the warm-up parsing a formula beside a job; a Bokeh warning in the
# next button click raised TypeError and the click was lost)
_DEFAULT_SHOW = warnings.showwarning


def _show(message, category, filename, lineno, file=None, line=None):
    sink = getattr(_local, "sink", None)
    if sink is not None:
        sink.append(str(message))
    else:  # a thread without a collector: as it would have been shown
        (_state["show"] or _DEFAULT_SHOW)(message, category, filename, lineno, file, line)


@contextmanager
def collected():
    """Collect the messages of every warning this thread raises (each time it is raised)."""
    sink: list[str] = []
    with _lock:
        if _state["open"] == 0:
            context = warnings.catch_warnings()
            context.__enter__()
            _state.update(context=context, show=warnings.showwarning)
            warnings.simplefilter("always")
            warnings.showwarning = _show
        _state["open"] += 1
    outer = getattr(_local, "sink", None)
    _local.sink = sink
    try:
        yield sink
    finally:
        _local.sink = outer
        with _lock:
            _state["open"] -= 1
            if _state["open"] == 0:
                _state["context"].__exit__(None, None, None)
                _state.update(context=None, show=None)
