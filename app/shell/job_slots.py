"""Server-wide job slots: at most N fits or cross-validations run at once over all sessions;
the others wait in arrival order and can show their place in the queue.

One slot per CPU core by default (SURVSCAN_JOB_SLOTS): more jobs at once only share the cores
and all finish later. This is the one piece of state the sessions share on purpose.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from . import config


class JobSlots:
    """``size`` slots; ``slot()`` waits for one (first come, first served)."""

    def __init__(self, size: int):
        self.size = max(1, int(size))
        self._cond = threading.Condition()
        self._running = 0
        self._waiting: list[object] = []

    @contextmanager
    def slot(self, cancel: threading.Event | None = None, on_wait=None):
        """Hold a slot for the ``with`` block. While waiting, ``on_wait(position)`` (1 = next)
        is called as the place changes; a set ``cancel`` stops waiting (the job then sees it)."""
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
            told = None
            while (self._running >= self.size or self._waiting[0] is not ticket) and not (
                    cancel is not None and cancel.is_set()):
                place = self._waiting.index(ticket) + 1
                if on_wait is not None and place != told:
                    on_wait(place)
                    told = place
                self._cond.wait(timeout=0.25)
            self._waiting.remove(ticket)
            self._running += 1
            self._cond.notify_all()
        if on_wait is not None and told is not None:
            on_wait(0)
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()


SLOTS = JobSlots(config.job_slots())
