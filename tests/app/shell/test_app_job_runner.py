"""The pages' job runner without a browser: success, failure, Cancel, the place in the queue,
the progress text and bar, and the buttons handed back however a job ends."""

from __future__ import annotations

import asyncio
import threading

import panel as pn
import pytest

import engine
from app.shell.job_slots import JobSlots
from app.shell import job_runner
from app.shell.widgets import markdown
from app.shell.job_runner import JobProgress, JobRunner


@pytest.fixture
def notes(monkeypatch):
    """The toasts the runner raised, as (kind, message)."""
    seen = []
    monkeypatch.setattr(job_runner, "notify", lambda kind, message, duration=0:
                        seen.append((kind, message)))
    return seen


@pytest.fixture
def runner():
    run_button = pn.widgets.Button(label="Run")
    yield JobRunner(markdown("No job yet."), [run_button], cancelling="Stopping ...")
    pn.state.reset()


def describe(p) -> str:
    return f"Working … step {p.done} of {p.total}, {p.elapsed:.1f} s"


def job(runner, work, **texts):
    """``runner.run`` of ``work`` with texts of a job called "Job" unless given."""
    texts = {"notice": "Job", "done": lambda result, p: "Done.",
             "cancelled": lambda p: "Job cancelled.", **texts}
    return runner.run(work, describe, **texts)


def handed_back(runner) -> bool:
    """The buttons as before the job: Run on, Cancel off, no bar."""
    return (not runner.running and not runner.buttons[0].disabled
            and runner.cancel_button.disabled and not runner.progress.visible)


async def until(condition, seconds: float = 60) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), seconds)


def test_a_job_that_succeeds_keeps_its_result(runner, notes):
    kept = []

    def keep(result, p):
        kept.append(result)
        return f"Got {result} in {p.elapsed:.2f} s."

    outcome = asyncio.run(job(runner, lambda cancel, progress: 42, done=keep))
    assert outcome == runner.last_outcome == "done" and kept == [42]
    assert runner.status.object.startswith("Got 42 in ")
    assert notes[-1][0] == "success" and notes[-1][1].startswith("Job done in ")
    assert handed_back(runner)


def test_a_failure_is_a_message_and_the_earlier_result_stays(runner, notes):
    kept = ["earlier"]

    def fail(cancel, progress):
        raise ValueError("column 'week' has negative times")

    outcome = asyncio.run(job(runner, fail, notice="fit 2", failed="Fit failed (fit 2)",
                              done=lambda result, p: kept.append(result) or "kept",
                              explain=str.upper))
    assert outcome == "failed" and kept == ["earlier"]
    assert runner.status.object == "Fit failed (fit 2): COLUMN 'WEEK' HAS NEGATIVE TIMES"
    assert notes == [("error", "fit 2 failed: COLUMN 'WEEK' HAS NEGATIVE TIMES")]
    assert handed_back(runner)


def test_an_error_while_keeping_the_result_is_a_failure_too(runner, notes):
    def keep(result, p):
        raise KeyError("plot")

    outcome = asyncio.run(job(runner, lambda cancel, progress: 1, notice="Scan", done=keep))
    assert outcome == "failed" and runner.status.object == "Scan failed: 'plot'"
    assert handed_back(runner)


def test_cancel_stops_the_job_and_says_where(runner, notes):
    def work(cancel, progress):
        progress(300, 1000)  # the bar's bounds follow its max (the first report jumps to 1000)
        cancel.wait(30)
        raise engine.Cancelled("cancelled")

    async def go():
        task = asyncio.ensure_future(job(
            runner, work, cancelled=lambda p: f"Job cancelled at step {p.done} of {p.total}."))
        await until(lambda: "step 300 of 1000" in runner.status.object)
        assert runner.running and runner.buttons[0].disabled
        assert not runner.cancel_button.disabled
        bar = runner.progress
        assert bar.visible and (bar.value, bar.max) == (300, 1000)
        runner.cancel()
        assert runner.status.object == "Stopping ..."
        return await task

    assert asyncio.run(go()) == "cancelled"
    assert runner.status.object == "Job cancelled at step 300 of 1000."
    assert notes == [("warning", "Job cancelled")]
    assert handed_back(runner)


def test_cancel_before_the_result_is_kept_drops_it(runner, notes):
    """Cancel pressed while the job ends without a further check (its last iteration, say):
    the result is not kept and the job says cancelled, as the user asked (the browser test of
    a long fit's Cancel failed when the fit ended just after the click)."""
    kept, pressed = [], threading.Event()

    def work(cancel, progress):
        progress(3, 0)
        pressed.wait(30)        # ends without looking at ``cancel``
        return "a finished fit"

    async def go():
        task = asyncio.ensure_future(job(runner, work, done=lambda r, p: kept.append(r) or "",
                                         cancelled=lambda p: f"Job cancelled at {p.done}."))
        await until(lambda: "step 3" in runner.status.object)
        runner.cancel()
        pressed.set()
        return await task

    assert asyncio.run(go()) == "cancelled" and kept == []
    assert runner.status.object == "Job cancelled at 3."
    assert notes == [("warning", "Job cancelled")] and handed_back(runner)
    outcome = asyncio.run(job(runner, lambda cancel, progress: 7, done=lambda r, p: kept.append(r)
                              or "Done."))
    assert outcome == "done" and kept == [7]       # the next job is not cancelled


def test_a_job_waits_for_a_slot_and_shows_its_place(runner, notes, monkeypatch):
    slots = JobSlots(1)
    monkeypatch.setattr(job_runner, "SLOTS", slots)
    held, release = threading.Event(), threading.Event()

    def other_session():
        with slots.slot():
            held.set()
            release.wait(30)

    threading.Thread(target=other_session).start()
    held.wait()

    async def go():
        task = asyncio.ensure_future(job(runner, lambda cancel, progress: 1))
        await until(lambda: "waiting, number 1 in the queue" in runner.status.object)
        assert runner.status.object.startswith("The server is busy: ")
        release.set()
        return await task

    try:
        assert asyncio.run(go()) == "done"
    finally:
        release.set()
    assert handed_back(runner)


def test_a_refused_job_is_a_message(runner, notes):
    runner.refuse("Scan not run: no phenotype file", "Cannot run the scan: no phenotype file")
    assert runner.last_outcome == "failed"
    assert runner.status.object == "Scan not run: no phenotype file"
    assert notes == [("error", "Cannot run the scan: no phenotype file")]


def test_progress_eta_from_the_rate_since_the_first_report():
    p = JobProgress()
    assert p.eta() == "—"
    p(0, 100)
    threading.Event().wait(0.2)
    p(10, 100)  # 10 done in >= 0.2 s: 90 left take >= 9 x 0.2 s
    assert 1.8 <= float(p.eta().removesuffix(" s")) < 60
    p.say("bootstrap")
    assert (p.done, p.total, p.note) == (10, 100, "bootstrap")
