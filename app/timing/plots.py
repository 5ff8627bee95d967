"""The Timing page's plots: seconds per backend and peer, and how a fit scales with N.
Pure functions from the timings the page measured."""

from __future__ import annotations

import holoviews as hv
import pandas as pd


def timing_bars(df: pd.DataFrame) -> hv.Bars:
    done = df.dropna(subset=["seconds"])
    return hv.Bars(done, "method", "seconds").opts(
        invert_axes=True, width=900, height=60 + 32 * max(len(done), 1), logx=False,
        title="Seconds on the current data (shorter is faster)", color="#1f77b4",
        show_grid=True, toolbar="above")


def scaling_plot(df: pd.DataFrame) -> hv.Overlay:
    curves = [hv.Curve(g, "N", "seconds", label=m) * hv.Scatter(g, "N", "seconds", label=m)
              for m, g in df.groupby("method", sort=False)]
    return hv.Overlay(curves).opts(
        logx=True, logy=True, width=900, height=380, legend_position="top_left",
        title="Scaling over N (log-log): naive O(N²) vs scans", show_grid=True, toolbar="above")
