"""The plots more than one page draws (Kaplan-Meier and cumulative incidence curves, the
cross-validation curve, the forest plot: a Bokeh figure) and their helpers: pure functions from
tables the engine computed to HoloViews objects; a page's own plots are in its plots.py.

No numerics here: the curves, bands and counts come from engine results; these functions only
choose marks, colours and axes.
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd
from bokeh.embed import file_html
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, LayoutDOM, Range1d, Span
from bokeh.plotting import figure
from bokeh.resources import INLINE
from holoviews.plotting.bokeh.element import ElementPlot

# The mouse wheel scrolls the page; a plot zooms by its toolbar (wheel zoom, box zoom) only.
# HoloViews makes wheel zoom active by default, and a long page stuck on every plot it crossed.
ElementPlot.active_tools = ["pan"]

MAX_STEPS = 2_000   # points per drawn curve (every step is kept below this)
MAX_TICKS = 400     # censor ticks per curve (evenly thinned above this)
PLOT_WIDTH = 900
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf")
IMBALANCE = 0.1  # |standardized difference| above this counts as imbalanced


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """About ``count`` round time points from lo to hi."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / (count - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10)), key=lambda c: abs(c - raw))
    first = math.ceil(lo / step) * step
    ticks = list(np.arange(first, hi + step * 1e-9, step))
    return [float(round(t, 10)) for t in ticks][: count + 1]


def left_border(plot, element) -> None:
    """The same left border on the curves and the at-risk table, so their time axes align."""
    plot.state.min_border_left = 150


def steps(x: np.ndarray, *ys: np.ndarray):
    """Staircase (steps-post) coordinates for a band."""
    xs = np.repeat(x, 2)[1:]
    out = [np.repeat(y, 2)[:-1] for y in ys]
    return (xs, *out)


def score_by_arm(arms, xlabel: str, title: str, bins: int = 40) -> hv.Overlay:
    """A score's distribution in each arm on [0, 1] (density histograms, overlaid): the
    propensity score of the Data page's weights, the OMOP study's preference score.  ``arms``:
    (label, values) pairs, coloured in order."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    parts = []
    for k, (arm, values) in enumerate(arms):
        density, _ = np.histogram(values, bins=edges, density=True)
        parts.append(hv.Histogram((edges, density), kdims=[xlabel], vdims=["density"],
                                  label=arm)
                     .opts(color=PALETTE[k], alpha=0.45, line_alpha=0))
    return hv.Overlay(parts).opts(
        title=title, width=PLOT_WIDTH // 2, height=320, xlim=(0, 1),
        legend_position="top_left", show_grid=True, toolbar="above")


def km_plot(table: pd.DataFrame, risk: pd.DataFrame, window: tuple[float, float],
            time_label: str = "time", ci: bool = True) -> hv.Layout:
    """Kaplan-Meier curves with CI bands and censor ticks, over an aligned at-risk table.

    ``table``: one row per group and time (time, group, survival, lower, upper, censored), as
    engine.kaplan_meier's ``table``; ``risk``: group, time, at risk, events, censored at the
    ticks of the at-risk table.
    """
    lo, hi = window
    pad = 0.03 * (hi - lo) if hi > lo else 1.0
    curves, levels = [], list(dict.fromkeys(table["group"]))
    for k, level in enumerate(levels):
        color = PALETTE[k % len(PALETTE)]
        g = table[table["group"] == level]
        drawn = g
        if len(g) >= MAX_STEPS:  # thin a 200,000-step curve to what a screen can show
            drawn = g.iloc[np.unique(np.linspace(0, len(g) - 1, MAX_STEPS - 1).astype(int))]
        first = min(0.0, float(drawn["time"].iloc[0]))  # every curve starts at S = 1
        x = np.r_[first, drawn["time"].to_numpy(float)]
        if ci:
            band = drawn[["lower", "upper"]].ffill().fillna(1.0)
            xs, lower, upper = steps(x, np.r_[1.0, band["lower"].to_numpy(float)],
                                     np.r_[1.0, band["upper"].to_numpy(float)])
            curves.append(hv.Area((xs, lower, upper), time_label, ["lower", "upper"],
                                  label=str(level)).opts(color=color, alpha=0.15, line_alpha=0))
        curves.append(hv.Curve((x, np.r_[1.0, drawn["survival"].to_numpy(float)]), time_label,
                               "survival", label=str(level))
                      .opts(interpolation="steps-post", color=color, line_width=2))
        censored = g[g["censored"] > 0]
        if len(censored) > MAX_TICKS:
            censored = censored.iloc[np.linspace(0, len(censored) - 1, MAX_TICKS).astype(int)]
        if len(censored):
            curves.append(hv.Scatter((censored["time"].to_numpy(float),
                                      censored["survival"].to_numpy(float)),
                                     time_label, "survival", label=str(level))
                          .opts(marker="dash", angle=90, size=10, color=color, line_width=2,
                                show_legend=False))
    km = hv.Overlay(curves).opts(
        title="Kaplan-Meier (95% CI bands; ticks = censored)", ylim=(0, 1.02),
        ylabel="survival probability",
        xlim=(lo - pad, hi + pad), show_grid=True, width=PLOT_WIDTH, height=380,
        legend_position="bottom_left", hooks=[left_border], toolbar="above")
    names = [f"{level}: {what}" for level in levels for what in ("at risk", "events",
                                                                   "censored")]
    labels = [(r["time"], f"{r['group']}: {what}", str(int(r[what])))
              for _, r in risk.iterrows() for what in ("at risk", "events", "censored")]
    table_el = hv.Labels(labels, [time_label, "row"], "count").opts(
        width=PLOT_WIDTH, height=40 + 22 * len(names), xlim=(lo - pad, hi + pad),
        text_font_size="9pt",
        title="Number at risk / events / censored since the time before", hooks=[left_border],
        yaxis="left", show_grid=False, toolbar=None, invert_yaxis=True, ylabel="",
        xlabel=time_label, text_color="black")
    return (km + table_el).cols(1).opts(shared_axes=True)


def cif_plot(curves: pd.DataFrame, cause: int, window: tuple[float, float],
             time_label: str = "time") -> hv.Overlay:
    lo, hi = window
    pad = 0.03 * (hi - lo) if hi > lo else 1.0
    parts = []
    for k, (level, g) in enumerate(curves.groupby("group", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        x = g["time"].to_numpy(float)
        band = g[["lower", "upper"]].ffill().fillna(0.0)
        xs, lower, upper = steps(x, band["lower"].to_numpy(float), band["upper"].to_numpy(float))
        parts.append(hv.Area((xs, lower, upper), time_label, ["lower", "upper"], label=str(level))
                     .opts(color=color, alpha=0.15, line_alpha=0))
        parts.append(hv.Curve((x, g["cif"].to_numpy(float)), time_label, "cumulative incidence",
                              label=str(level))
                     .opts(interpolation="steps-post", color=color, line_width=2))
    return hv.Overlay(parts).opts(
        title=f"Cumulative incidence of cause {cause} (Aalen-Johansen, 95% CI)",
        ylim=(0, 1.02), xlim=(lo - pad, hi + pad), width=PLOT_WIDTH, height=340,
        show_grid=True, legend_position="top_left", ylabel="cumulative incidence",
        toolbar="above", hooks=[left_border])


def cv_plot(curve: pd.DataFrame, chosen: float, penalty: str) -> figure:
    """The CV score (mean +/- sd over folds) against lambda on a log axis; the chosen lambda
    marked by a dashed line.  A Bokeh figure, as the forest plot: HoloViews' rendering of its
    four marks took 75-90 ms of every cross-validation's click-to-result against 18 ms."""
    lam, mean, sd = (curve[c].to_numpy(float) for c in ("lambda", "mean", "sd"))
    source = ColumnDataSource({"lambda": lam, "mean": mean, "lower": mean - sd,
                               "upper": mean + sd})
    plot = figure(title=f"Cross-validated {penalty} strength (dashed: chosen lambda = "
                        f"{chosen:.4g})", x_axis_type="log", x_axis_label="lambda",
                  y_axis_label="CV partial log-likelihood", width=PLOT_WIDTH, height=340,
                  tools="pan,wheel_zoom,box_zoom,save,reset", active_drag="pan",
                  active_scroll=None, toolbar_location="above", min_border_left=150)
    plot.varea("lambda", "lower", "upper", source=source, fill_color=PALETTE[0],
               fill_alpha=0.2, legend_label="mean ± sd over folds")
    plot.line("lambda", "mean", source=source, color=PALETTE[0], line_width=2,
              legend_label="mean")
    plot.scatter("lambda", "mean", source=source, color=PALETTE[0], size=7)
    plot.add_layout(Span(location=chosen, dimension="height", line_color=PALETTE[1],
                         line_dash="dashed", line_width=2))
    plot.legend.location = "bottom_left"
    plot.toolbar.logo = None
    return plot


def forest_plot(summary: pd.DataFrame, title: str = "Hazard ratios (95% CI)",
                ratio: str = "hazard ratio") -> figure:
    """HR (or ``ratio``, e.g. Fine-Gray's subdistribution HR) with CI segments on a log axis and
    a line at 1.  A Bokeh figure, not HoloViews: it is drawn after every fit, and HoloViews'
    rendering of these three marks took 0.3 s of the fit's click-to-result against 0.1 s."""
    df = summary.reset_index()
    df = df[np.isfinite(df["hr"]) & (df["hr"] > 0)].reset_index(drop=True)
    n = len(df)
    ys = np.arange(n)[::-1].astype(float)
    finite_ci = (np.isfinite(df["hr_lower"]) & np.isfinite(df["hr_upper"])
                 & (df["hr_lower"] > 0)).to_numpy()
    seg = df[finite_ci]
    values = np.concatenate([df["hr"], seg["hr_lower"], seg["hr_upper"]]) if n else np.array([1])
    lo, hi = min(values.min(), 1.0), max(values.max(), 1.0)
    plot = figure(title=title, x_axis_type="log", x_axis_label=ratio, width=PLOT_WIDTH,
                  height=max(160, 40 + 28 * n), x_range=Range1d(lo / 1.3, hi * 1.3),
                  y_range=Range1d(-0.7, n - 0.3), tools="pan,wheel_zoom,box_zoom,save,reset",
                  active_drag="pan", active_scroll=None, toolbar_location="above",
                  min_border_left=150)
    plot.segment("lower", "y", "upper", "y", color="#1f77b4", line_width=2,
                 source=ColumnDataSource({"lower": seg["hr_lower"].to_numpy(),
                                          "upper": seg["hr_upper"].to_numpy(),
                                          "y": ys[finite_ci]}))
    points = plot.scatter("hr", "y", size=9, marker="square", color="color",
                          source=ColumnDataSource({
                              "hr": df["hr"].to_numpy(), "y": ys,
                              "color": np.where(df["penalized"].astype(bool), "#ff7f0e",
                                                "#1f77b4"),        # orange: penalised
                              "covariate": df["covariate"].astype(str).to_numpy()}))
    plot.add_tools(HoverTool(renderers=[points],
                             tooltips=[("covariate", "@covariate"), (ratio, "@hr{0.0000}")]))
    plot.add_layout(Span(location=1.0, dimension="height", line_color="black",
                         line_dash="dashed"))
    plot.toolbar.logo = None
    plot.yaxis.ticker = FixedTicker(ticks=ys.tolist())
    plot.yaxis.major_label_overrides = {float(y): str(name)
                                        for y, name in zip(ys, df["covariate"])}
    return plot


def plot_html(obj, title: str) -> str:
    """A HoloViews object or a Bokeh figure as one self-contained HTML page (Bokeh JS
    inlined)."""
    model = obj if isinstance(obj, LayoutDOM) else hv.render(obj, backend="bokeh")
    return file_html(model, INLINE, title)
