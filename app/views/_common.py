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
