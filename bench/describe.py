"""The Describe tab of the served app at n rows: for each change of a choice, how long its
sections take in the page's worker thread, and the longest the server's one event loop is held
meanwhile (every session's page waits that long): the widget's callback itself, and the
longest gap of a coroutine that ticks on the loop every 5 ms while the page's job runs.

    python -m bench.describe [n] [--at-once]

The data: n rows of an exponential follow-up with 60% events, a 0/1 treatment, age, sex and
BMI.  Until session 28 each change was computed in the widget's callback, the loop held for
all of it (``--at-once`` measures that way: every section in the callback, as the page still
does for at most INLINE_ROWS rows); now the loop is held only while the page takes the results
(the widgets' update).  Prints the CPU model and, per change, the worker's seconds
and the longest hold, as JSON (survival at other times is read from the curves on the page,
in the callback, with no job).
"""
import asyncio
import json
import sys
import time

import numpy as np
import pandas as pd
import panel as pn

from app.data.store import Store
from app.describe import view as describe_view
from bench.spline_term import cpu_name

CHANGES = (("no group", "group", "(none)"),
           ("group by treat", "group", "treat"),
           ("plot options", "options", ["Risk table", "Censor marks"]),
           ("survival at times", "times", "1, 2, 5"),
           ("subgroups by sex", "subgroups", ["sex"]))


def cohort_frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"time": rng.exponential(10, n).round(2) + 0.01,
                         "event": (rng.random(n) < 0.6).astype(int),
                         "treat": rng.integers(0, 2, n), "age": rng.normal(60, 10, n).round(),
                         "sex": rng.choice(["F", "M"], n), "bmi": rng.normal(27, 4, n)})


async def timed_job(view) -> tuple[float, float]:
    """(seconds, longest gap between the loop's ticks) while the page's waiting sections run."""
    held, done = [0.0], asyncio.Event()

    async def ticker():
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            held[0] = max(held[0], now - last - 0.005)
            last = now

    tick = asyncio.ensure_future(ticker())
    t0 = time.perf_counter()
    await view.work_through()
    seconds = time.perf_counter() - t0
    done.set()
    await tick
    return seconds, held[0]


def main(n=1_000_000, at_once=False):
    if not at_once:
        describe_view.served = lambda: True      # the served app's path: the page's job runner
        pn.state.execute = lambda callback: None     # ... which timed_job runs, beside a ticker
    store = Store()
    store.load_frame(cohort_frame(n), {"kind": "bench"})
    store.time, store.event = "time", "event"
    view = describe_view.DescribeView(store=store)
    asyncio.run(timed_job(view))                 # the page's first numbers (no group)
    out = {"cpu": cpu_name(), "n": n, "at_once": at_once, "changes": []}
    for name, widget, value in CHANGES:
        t0 = time.perf_counter()
        setattr(getattr(view, widget), "value", value)   # the widget's callback, on the loop
        callback = time.perf_counter() - t0
        seconds, held = asyncio.run(timed_job(view))
        out["changes"].append({"change": name, "callback_s": callback, "job_s": seconds,
                               "loop_held_s": max(callback, held)})
        print(json.dumps(out["changes"][-1]), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2] if a != "--at-once"), at_once="--at-once" in sys.argv)
