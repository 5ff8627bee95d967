"""Helpers the views share: notifications, worker threads, tables and Markdown that never
render a user's text (file names, column headers, values) as HTML."""

from __future__ import annotations

import asyncio
import html
import logging
import threading

import pandas as pd
import panel as pn
from bokeh.models.widgets.tables import NumberFormatter

log = logging.getLogger("survscan.app")


LONGEST_TOAST_MS = 20_000  # an error stays this long (or until its x is clicked), then closes


def notify(kind: str, message: str, duration: int = 8000) -> None:
    """A toast (error/warning/success/info) when the page has notifications; logged always.

    Every toast closes by itself: ``duration`` 0 (once "until dismissed", and toasts piled up
    over the page) means the longest, ``LONGEST_TOAST_MS``."""
    getattr(log, "warning" if kind in ("error", "warning") else "info")("%s: %s", kind, message)
    notifications = pn.state.notifications
    if notifications is not None:  # the toast sets HTML: a file name must stay text
        shown = LONGEST_TOAST_MS if duration <= 0 else min(duration, LONGEST_TOAST_MS)
        getattr(notifications, kind)(html.escape(message), duration=shown)


def served() -> bool:
    """True in a session of the served app (a browser waits on the server's one event loop:
    long work goes to a worker thread); False in a script or a test (work is done at once)."""
    return pn.state.curdoc is not None and pn.state.curdoc.session_context is not None


def text_options(values) -> dict:
    """Options of a MultiChoice (Choices.js renders a label as HTML): label as text -> value."""
    return {html.escape(str(v)): v for v in values}


def markdown(text: str = "", **kwargs) -> pn.pane.Markdown:
    """A Markdown pane in which raw HTML (say a column named <img onerror=...>) is shown as
    text, never run."""
    return pn.pane.Markdown(text, renderer_options={"html": False}, **kwargs)


def newest_file(value: dict | None) -> tuple[str, bytes] | None:
    """The last file a FileDropper holds, as (name, bytes); None when it holds none."""
    if not value:
        return None
    filename, content = list(value.items())[-1]
    return filename, content.encode("utf-8") if isinstance(content, str) else bytes(content)


async def in_thread(fn, *args, name: str = "survscan-worker"):
    """Run ``fn(*args)`` in a new daemon thread (one per call) and await its result.

    The event loop stays free: other callbacks (Cancel, other tabs) run meanwhile.
    """
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def target():
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting coroutine, never lost
            loop.call_soon_threadsafe(_settle, future, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, future, result, None)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await future


def _settle(future, result, exc):
    if future.cancelled():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


def number_formatters(df: pd.DataFrame, digits: int = 6) -> dict:
    """Tabulator formatters: floats to ``digits`` decimals."""
    fmt = "0." + "0" * digits
    return {c: NumberFormatter(format=fmt) for c in df.columns
            if pd.api.types.is_float_dtype(df[c])}


def table(df: pd.DataFrame | None = None, **kwargs) -> pn.widgets.Tabulator:
    """A read-only Tabulator with the app's defaults."""
    opts = dict(disabled=True, show_index=False, sizing_mode="stretch_width",
                layout="fit_data_table")
    opts.update(kwargs)
    widget = pn.widgets.Tabulator(pd.DataFrame() if df is None else df, **opts)
    widget.titles = escaped_titles(widget.value)
    return widget


def show(widget: pn.widgets.Tabulator, df: pd.DataFrame, digits: int | None = None) -> None:
    """Put ``df`` in a table in one update: values, number formats (``digits`` decimals) and
    headers as text (Tabulator renders a title as HTML), so the table re-renders once."""
    updates = {"value": df, "titles": escaped_titles(df)}
    if digits is not None:
        updates["formatters"] = number_formatters(df, digits)
    with pn.io.hold():
        widget.param.update(**updates)


def escaped_titles(df: pd.DataFrame | None) -> dict:
    return {str(c): html.escape(str(c)) for c in (df.columns if df is not None else [])}


# ----------------------------------------------------------------------------------------
# parts of a page that are in the browser only while they have something to show
#
# A hidden pane or an empty table still costs the browser: its views are built (a Tabulator
# sizes itself even with no rows) and Bokeh measures every hidden element on each re-layout
# (LayoutDOMView.update_bbox calls getComputedStyle for each view without an offset parent).
# The Results page held about ten Tabulators, most empty or hidden until asked for; sent whole
# after every fit, they were most of the click-to-result time (issue 29). Each of these holders
# is a Column whose one object is there only while it shows something; the object itself keeps
# its values and ``visible`` as before, for the page's code and its tests.

def _holder(obj, present, names: list[str], **kwargs) -> pn.Column:
    holder = pn.Column(**{"sizing_mode": "stretch_width", "margin": 0, **kwargs})

    def sync(*events) -> None:
        want = bool(present(obj))
        if want != bool(holder.objects):
            holder.objects = [obj] if want else []

    obj.param.watch(sync, names)
    sync()
    return holder


def while_visible(obj, **kwargs) -> pn.Column:
    """``obj`` in a Column while ``obj.visible`` is true; an empty Column otherwise."""
    return _holder(obj, lambda o: o.visible, ["visible"], **kwargs)


def while_filled(widget: pn.widgets.Tabulator, **kwargs) -> pn.Column:
    """The table in a Column while it has rows; an empty Column otherwise."""
    return _holder(widget, lambda w: w.value is not None and len(w.value) > 0, ["value"],
                   **kwargs)


def while_set(pane, **kwargs) -> pn.Column:
    """The pane in a Column while its ``object`` is set (not None); an empty Column otherwise."""
    return _holder(pane, lambda p: p.object is not None, ["object"], **kwargs)
