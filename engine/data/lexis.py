"""Follow-up split along a second time scale (attained age, calendar time): Lexis bands.

A subject aged a at the time origin is aged a + t / unit at follow-up time t (``unit``: time
units per unit of the scale, 365.25 for days and years of age).  Rates by attained age, and
their standardisation, need each person-time piece in the band of age it was lived at, not the
band of the age at entry: the (start, stop] row is cut where the scale crosses a band limit b,
at t = (b - a) unit, the event staying on the last piece, and an event exactly at a cut belonging
to the earlier piece (R's survSplit on the age scale, Epi's splitLexis).  A band is labelled as
incidence_rates labels follow-up bands: "<= b1", "(b1, b2]", ..., "> bk".
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import validation as v
from ..core.errors import CohortError


def split_lexis(frame: pd.DataFrame, time: str, event: str, scale: str, breaks,
                unit: float = 1.0, start: str | None = None, band: str = "band",
                start_name: str = "start") -> pd.DataFrame:
    """The rows of ``frame`` cut where the time scale ``scale`` crosses a limit of ``breaks``.

    Parameters
    ----------
    frame : one row per subject, or (start, stop] rows.
    time, event : the follow-up (stop) time and event columns (the event stays on the piece
        that ends at the row's stop; earlier pieces get 0).
    scale : the column holding the second scale's value at follow-up time 0 (age at the time
        origin, the calendar year at entry), in the units of ``breaks``.
    breaks : increasing finite band limits on that scale (ages 40, 50, 60).
    unit : follow-up time units per unit of the scale (365.25 for days and years of age,
        52.18 for weeks); > 0.
    start : the entry-time column of (start, stop] rows; None: every row starts at 0.
    band : the name of the new column of band labels.
    start_name : the name of the entry-time column written when ``start`` is None.

    Returns
    -------
    DataFrame with one row per piece, the columns of ``frame`` (the index repeated: a
    subject's pieces keep its label), ``start`` (or ``start_name``) and ``time`` the piece's
    (start, stop], ``event`` on the last piece only, and ``band``.
    """
    v.check_columns_exist(frame.columns, [("time", time), ("event", event), ("scale", scale),
                                          *([("start", start)] if start else [])])
    labels = frame.index.to_numpy()
    stop0 = pd.to_numeric(frame[time], errors="coerce").to_numpy(float)
    start0 = (np.zeros(len(frame)) if start is None
              else pd.to_numeric(frame[start], errors="coerce").to_numpy(float))
    v.check_times(stop0, None if start is None else start0,
                  {"time": time, "start": start}, labels)
    origin = pd.to_numeric(frame[scale], errors="coerce").to_numpy(float)
    v.check_finite(origin, scale, "scale", labels)
    cuts = checked_limits(breaks, "band limits", "[40, 50, 60]")
    if not (isinstance(unit, (int, float, np.number)) and np.isfinite(unit) and unit > 0):
        raise ValueError(f"unit must be a positive number of follow-up time units per unit of "
                         f"{scale!r} (365.25 for days and years), got {unit!r}")
    if band in frame.columns or (start is None and start_name in frame.columns):
        taken = band if band in frame.columns else start_name
        raise CohortError(f"the frame has a column named {taken!r}; pass another name for the "
                          "new column.")
    # the band of the scale just after each row's start, and of its stop (a stop on a limit
    # ends in the band below it)
    first = np.searchsorted(cuts, origin + start0 / unit, side="right")
    last = np.searchsorted(cuts, origin + stop0 / unit, side="left")
    last = np.maximum(last, first)
    pieces = last - first + 1
    row = np.repeat(np.arange(len(frame)), pieces)
    k = np.arange(row.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    index = first[row] + k                       # band of each piece
    cut_before = (cuts[np.clip(index - 1, 0, cuts.size - 1)] - origin[row]) * unit
    cut_after = (cuts[np.clip(index, 0, cuts.size - 1)] - origin[row]) * unit
    lo = np.where(k == 0, start0[row], cut_before)
    hi = np.where(k == pieces[row] - 1, stop0[row], cut_after)
    out = frame.iloc[row].copy()
    out[start or start_name] = lo
    out[time] = hi
    events = frame[event].to_numpy()[row]
    out[event] = np.where(k == pieces[row] - 1, events, np.zeros_like(events))
    edges = np.concatenate(([-np.inf], cuts, [np.inf]))
    out[band] = np.asarray(band_labels(edges), dtype=object)[index]
    return out[hi > lo]


def checked_limits(breaks, what: str, example: str) -> np.ndarray:
    """``breaks`` as increasing finite numbers (the limits of bands: follow-up times, ages),
    or a ValueError saying ``what`` they must be, with an ``example``."""
    try:
        cuts = np.asarray(breaks, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"breaks must be numbers ({what}), got {breaks!r}") from None
    if cuts.size == 0 or not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0):
        raise ValueError(f"breaks must be increasing finite {what}, e.g. {example}, got "
                         f"{cuts.tolist()}")
    return cuts


def band_labels(edges) -> list[str]:
    """The bands between ``edges`` (-inf and +inf at the ends): "<= b1", "(b1, b2]", ...,
    "> bk", as R's survSplit cuts; "all" for the one band of no limit."""
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        out.append("all" if lo == -np.inf and hi == np.inf else f"<= {hi:g}" if lo == -np.inf
                   else f"> {lo:g}" if hi == np.inf else f"({lo:g}, {hi:g}]")
    return out
