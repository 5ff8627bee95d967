"""The SCCS page's plots: pure functions from tables the engine computed to HoloViews objects
(the forest of incidence-rate ratios with the bootstrap selection frequency, and the SCCS
diagnostics).  No numerics: only marks, colours and axes."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd
from holoviews.operation import histogram

from ..shell.plots import PLOT_WIDTH, left_border

BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#7f7f7f"


def irr_forest(table: pd.DataFrame, title: str = "Incidence-rate ratios (95% CI)") -> hv.Overlay:
    """IRR with its Wald CI per column on a log axis, a line at IRR = 1; orange: penalised.
    With a ``selected`` column (bootstrap P(beta != 0)) each row is labelled with it."""
    df = table[np.isfinite(table["irr"]) & (table["irr"] > 0)].reset_index(drop=True)
    n = len(df)
    ys = np.arange(n)[::-1].astype(float)
    ok = (np.isfinite(df["irr_lower"]) & np.isfinite(df["irr_upper"])
          & (df["irr_lower"] > 0)).to_numpy()
    seg = df[ok]
    segments = hv.Segments((seg["irr_lower"], ys[ok], seg["irr_upper"], ys[ok]),
                           ["incidence-rate ratio", "y", "x1", "y1"]).opts(color=BLUE,
                                                                           line_width=2)
    penalized = df["penalized"].astype(bool) if "penalized" in df else np.zeros(n, bool)
    colors = np.where(penalized, ORANGE, BLUE)
    points = hv.Scatter((df["irr"], ys, colors, df["covariate"]), "incidence-rate ratio",
                        ["y", "color", "covariate"]).opts(size=9, color="color",
                                                          marker="square", tools=["hover"])
    layers = segments * points * hv.VLine(1.0).opts(color="black", line_dash="dashed")
    values = np.concatenate([df["irr"], seg["irr_lower"], seg["irr_upper"], [1.0]])
    lo, hi = values.min() / 1.5, values.max() * 2.5
    if "selected" in df and n:
        text = [f"selected {v:.2f}" if np.isfinite(v) else "" for v in df["selected"]]
        labels = hv.Labels((np.full(n, hi / 1.6), ys, text), ["incidence-rate ratio", "y"],
                           "text").opts(text_font_size="9pt", text_color=GREY)
        layers = layers * labels
        title += " and bootstrap selection frequency"
    return layers.opts(
        title=title, logx=True, width=PLOT_WIDTH, height=max(160, 50 + 26 * n),
        yticks=[(y, name) for y, name in zip(ys, df["covariate"])], ylim=(-0.7, n - 0.3),
        xlim=(lo, hi), show_grid=True, ylabel="", hooks=[left_border], toolbar="above")


def time_to_event_plot(time_to_event: pd.DataFrame, bins: int = 40) -> hv.Histogram:
    """Days from the latest exposure start to each outcome (outcomes with an exposure
    before them)."""
    days = time_to_event.dropna(subset=["days_from_exposure"])
    data = hv.Dataset(days, "days_from_exposure")
    drug = f" ({days['drug'].iloc[0]})" if "drug" in days and len(days) else ""
    return histogram(data, dimension="days_from_exposure", num_bins=bins).opts(
        title=f"Days from exposure start to event{drug} (n = {len(days):,})",
        xlabel="days since the latest exposure start", ylabel="outcomes",
        width=PLOT_WIDTH // 2, height=300, color=BLUE, toolbar="above")


def observed_expected_plot(table: pd.DataFrame) -> hv.Overlay:
    """Observed outcomes by calendar month against the expected with no month effect."""
    months = [str(m) for m in table["month"]]
    bars = hv.Bars((months, table["observed"]), "month", "outcomes").opts(
        color=BLUE, alpha=0.6)
    expected = hv.Curve((months, table["expected"]), "month", "outcomes").opts(
        color=ORANGE, line_width=2)
    dots = hv.Scatter((months, table["expected"]), "month", "outcomes").opts(
        color=ORANGE, size=7)
    return (bars * expected * dots).opts(
        title="Observed (bars) and expected outcomes by month",
        width=PLOT_WIDTH // 2, height=300, toolbar="above")
