"""Warnings of jobs in overlapping threads reach their own job, and nothing leaks after."""

from __future__ import annotations

import threading
import warnings

from app.shell.caught_warnings import collected


def test_overlapping_threads_keep_their_own_warnings_and_restore_the_state():
    filters, show = list(warnings.filters), warnings.showwarning
    both_in, first_out = threading.Barrier(2), threading.Event()
    got = {}

    def first():
        with collected() as caught:
            both_in.wait()
            warnings.warn("first job", UserWarning)
            warnings.warn("first job", UserWarning)  # every time, not once per place
        got["first"] = caught
        first_out.set()

    def second():
        with collected() as caught:
            both_in.wait()
            warnings.warn("second job", RuntimeWarning)
            first_out.wait()  # the first job has left: this one still collects
            warnings.warn("second job, later", UserWarning)
        got["second"] = caught

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {"first": ["first job", "first job"],
                   "second": ["second job", "second job, later"]}
    assert warnings.showwarning is show and list(warnings.filters) == filters


def test_nested_collectors_hand_back_to_the_outer_one():
    with collected() as outer:
        warnings.warn("outer", UserWarning)
        with collected() as inner:
            warnings.warn("inner", UserWarning)
        warnings.warn("outer again", UserWarning)
    assert (outer, inner) == (["outer", "outer again"], ["inner"])


def test_a_hook_restored_after_the_last_collector_still_shows_warnings(recwarn):
    """Another thread's catch_warnings that begins while a collector is open, and ends after
    the last one closed, restores the collectors' hook for good: a warning raised later, where
    no collector is open, is shown as usual instead of raising TypeError (the served app lost
    a button click to it)."""
    opened, closed = threading.Event(), threading.Event()
    before = warnings.showwarning

    def job():
        with collected():
            opened.set()
            closed.wait()

    worker = threading.Thread(target=job)
    worker.start()
    opened.wait()
    saved = warnings.catch_warnings()
    saved.__enter__()                       # saves the collectors' hook
    closed.set()
    worker.join()                           # the last collector closes
    saved.__exit__(None, None, None)        # ... and the hook is put back
    try:
        warnings.warn("after every job", UserWarning)
    finally:
        warnings.showwarning = before
    assert [str(w.message) for w in recwarn] == ["after every job"]
