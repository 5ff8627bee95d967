"""One job runner for every page: run a long job in a worker thread once a server-wide job
slot is free, with a Cancel button, a progress bar and a status line, then say how it ended.

A page gives ``JobRunner.run`` its work, ``work(cancel, progress)``, and how to describe it;
the runner shows the place in the queue, then the page's progress text every 0.25 s; a
cancelled or failed job is a message (and a toast) and the page's earlier results stay; the
buttons come back however the job ended.
"""

from __future__ import annotations

import asyncio
import threading
import time

import panel as pn
import param

import engine

from .job_slots import SLOTS
from .widgets import in_thread, notify

POLL_S = 0.25  # the status line and the bar are refreshed this often


class JobProgress:
    """What a running job reported last, for the page's progress text.

    The worker calls it as ``progress(done, total)`` (``total`` 0: not known yet) or
    ``progress(done, total, note)``, or ``say(note)`` for text alone; the job slot sets
    ``place`` (1 = next in the queue, 0 = running).  ``elapsed`` counts from the request and
    stops when the job ends."""

    def __init__(self):
        self.done, self.total, self.note, self.place = 0, 0, "", 0
        self.started, self.ended = time.monotonic(), None
        self._first = None  # (time, done) of the first report: the rate is measured since

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if self._first is None:
            self._first = (time.monotonic(), done)
        self.done, self.total, self.note = done, total, note

    def say(self, note: str) -> None:
        self.note = note

    def wait(self, place: int) -> None:
        self.place = place

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def eta(self) -> str:
        """The time left at the rate since the first report, as text ("—" before there is
        a rate)."""
        if self._first is None:
            return "—"
        since, first = self._first
        rate = (self.done - first) / max(time.monotonic() - since, 1e-9)
        return f"{(self.total - self.done) / rate:.1f} s" if rate > 0 else "—"


class JobRunner(param.Parameterized):
    """Runs a page's jobs one at a time: the page's Run buttons (off while a job runs), a
    Cancel button and a progress bar (``cancel_button``, ``progress``: the page lays them
    out) and the page's status line."""

    running = param.Boolean(default=False, doc="a job runs or waits for a job slot")
    last_outcome = param.String(default="", doc="done | cancelled | failed (for tests)")

    def __init__(self, status: pn.pane.Markdown, buttons, cancel_label: str = "Cancel",
                 cancelling: str = "Cancelling ...", **params):
        super().__init__(**params)
        self.status = status
        self.buttons = list(buttons)
        self.cancelling = cancelling
        self.cancel_button = pn.widgets.Button(label=cancel_label, color="danger", width=120,
                                               disabled=True)
        self.cancel_button.on_click(self.cancel)
        self.progress = pn.indicators.Progress(active=False, value=0, max=100, width=360,
                                               bar_color="primary", visible=False)
        self._cancel = threading.Event()
        self._asked = False  # Cancel was pressed during the running job

    def cancel(self, event=None) -> None:
        """Ask the running job to stop (it stops at its next check).  A job that ends before
        its next check is cancelled all the same: its result is not kept (the user asked for
        none, and a page that changed after Cancel would surprise)."""
        if self.running:
            self._cancel.set()
            self._asked = True
            self.status.object = self.cancelling

    def refuse(self, message: str, toast: str | None = None) -> None:
        """A job that could not start (a bad setting): the status line and an error toast."""
        self.status.object = message
        self.last_outcome = "failed"
        notify("error", toast or message, duration=0)

    async def run(self, work, describe, *, notice: str, done, cancelled,
                  failed: str | None = None, explain=str, counted: bool = True,
                  thread: str = "survscan-job", toast_done: bool = True) -> str:
        """Run ``work(cancel, progress)`` and return the outcome: done | cancelled | failed.
        One job at a time: the page checks ``running`` before it builds a job.

        describe(progress) : the status line while it runs (after the place in the queue)
        notice : the job in toasts ("fit 1" -> "fit 1 done in 2.10 s", "fit 1 cancelled")
        done(result, progress) : keeps the result and returns the status line; an error here
            is a failure too (the page must keep its earlier results until all is built)
        failed : the status line's start on failure ("Fit failed (fit 1)"; default "{notice}
            failed"), followed by ``explain(str(error))``
        cancelled(progress) : the status line after Cancel
        counted : the bar shows ``done`` of ``total``; False when ``total`` is only a cap (the
            iterations allowed): the bar then just moves
        toast_done : a toast says the job is done (False for the jobs a page starts by itself
            on every change of a choice: the status line says it)
        """
        cancel = self._cancel = threading.Event()
        self._asked = False
        progress = JobProgress()
        self._start()
        try:
            result = await self._wait(work, cancel, progress, describe, counted, thread)
            if self._asked:
                raise engine.Cancelled("cancelled after the job's last check")
            # what keeping the result redraws (Results: a dozen panes and tables, and the tab
            # it opens), the status line and the toast go to the browser as one patch, the
            # document's model graph recomputed once (each change alone was a patch, a browser
            # re-layout and a recompute of every model: the toast's own recompute was 60-85 ms
            # of the server's time at the end of every job)
            with pn.io.hold(freeze=True):
                message = done(result, progress)
                self._finish("done", message)
                if toast_done:
                    notify("success", f"{notice} done in {progress.elapsed:.2f} s",
                           duration=3000)
        except engine.Cancelled:
            self._finish("cancelled", cancelled(progress))
            notify("warning", f"{notice} cancelled", duration=4000)
        except Exception as exc:  # a failed job is a message; the page's earlier results stay
            reason = explain(str(exc))
            self._finish("failed", f"{failed or notice + ' failed'}: {reason}")
            notify("error", f"{notice} failed: {reason}", duration=0)
        return self.last_outcome

    async def _wait(self, work, cancel, progress, describe, counted, thread):
        """The result of ``work`` in a new thread inside a job slot; meanwhile the status line
        and the bar follow ``progress`` (until Cancel, whose message then stays)."""
        def in_slot():
            with SLOTS.slot(cancel, progress.wait):
                return work(cancel, progress)

        task = asyncio.ensure_future(in_thread(in_slot, name=thread))
        try:
            while not task.done():
                if not cancel.is_set():
                    self._show(progress, describe, counted)
                await asyncio.wait([task], timeout=POLL_S)
            return task.result()
        finally:
            progress.ended = time.monotonic()
            cancel.set()  # a page error (or the session closing) stops the worker too

    def _show(self, progress: JobProgress, describe, counted: bool) -> None:
        if progress.place:
            self.status.object = (f"The server is busy: waiting, number {progress.place} in "
                                  f"the queue ({progress.elapsed:.1f} s)")
            return
        self.status.object = describe(progress)
        if counted and progress.total:
            self.progress.max = progress.total  # first: the bounds of ``value`` follow ``max``
            self.progress.value = min(progress.done, progress.total)

    def _start(self) -> None:
        self.running = True
        for button in self.buttons:
            button.disabled = True
        self.cancel_button.disabled = False
        self.progress.param.update(active=True, value=-1, max=100, visible=True)

    def _finish(self, outcome: str, message: str) -> None:
        """Say how the job ended and hand the buttons back (after a failure too)."""
        self.status.object = message
        self.progress.param.update(active=False, value=0, visible=False)
        for button in self.buttons:
            button.disabled = False
        self.cancel_button.disabled = True
        self.running = False
        self.last_outcome = outcome
