"""Server-wide job slots: first come, first served, with the place in the queue told."""

from __future__ import annotations

import threading

from app.shell.job_slots import JobSlots


def test_jobs_wait_in_order_and_see_their_place():
    slots = JobSlots(1)
    started, order, places = threading.Event(), [], {"b": [], "c": []}
    release = threading.Event()

    def job(name, hold=None):
        with slots.slot(on_wait=places.get(name, []).append):
            order.append(name)
            if hold is not None:
                started.set()
                hold.wait()

    first = threading.Thread(target=job, args=("a", release))
    first.start()
    started.wait()
    second = threading.Thread(target=job, args=("b",))
    second.start()
    while places["b"] != [1]:  # b is next in line
        threading.Event().wait(0.01)
    third = threading.Thread(target=job, args=("c",))
    third.start()
    while places["c"] != [2]:
        threading.Event().wait(0.01)
    release.set()
    for t in (first, second, third):
        t.join()
    assert order == ["a", "b", "c"]
    assert places["b"] == [1, 0]
    # c was second in line; whether it saw place 1 depends on how fast b ran
    assert places["c"][0] == 2 and places["c"][-1] == 0
    assert places["c"] == sorted(places["c"], reverse=True)


def test_a_cancelled_job_stops_waiting():
    slots = JobSlots(1)
    cancel, held, release = threading.Event(), threading.Event(), threading.Event()

    def holder():
        with slots.slot():
            held.set()
            release.wait()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    cancel.set()
    with slots.slot(cancel):  # returns at once although the one slot is taken
        pass
    release.set()
    t.join()
    with slots.slot():  # every slot given back
        pass


def test_a_fit_waits_for_a_free_slot_and_shows_its_place(monkeypatch):
    import asyncio

    import panel as pn

    from app import main

    slots = JobSlots(1)
    monkeypatch.setattr("app.shell.job_runner.SLOTS", slots)
    app = main.build_app()
    held, release = threading.Event(), threading.Event()

    def other_session():
        with slots.slot():
            held.set()
            release.wait()

    threading.Thread(target=other_session).start()
    held.wait()

    async def fit_behind_the_other():
        task = asyncio.ensure_future(app.fit.run_fit())
        while "number 1 in the queue" not in app.fit.status.object:
            await asyncio.sleep(0.05)
        release.set()
        await task

    try:
        asyncio.run(fit_behind_the_other())
    finally:
        release.set()
        pn.state.reset()
    assert app.fit.runner.last_outcome == "done" and len(app.workbench.fits) == 1
