"""The Bayesian page's plots (HoloViews/Bokeh), pure functions of the tables BayesState makes:
a caterpillar of posterior intervals, traces, autocorrelations and the shrinkage plot (lists of
plots go side by side in a Panel Row: a Bokeh grid or a FlexBox of them rendered collapsed)."""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (the options below are Bokeh's)
import pandas as pd

WIDTH = 760


def caterpillar(table: pd.DataFrame, scale: str) -> hv.Overlay:
    """Posterior mean (dot), 90% (thick) and 95% (thin) intervals per slope, top to bottom."""
    df = table.rename_axis("coefficient").reset_index()
    names = list(df["coefficient"])[::-1]
    height = max(220, 24 * len(names) + 80)
    opts = dict(width=WIDTH, height=height, invert_axes=True, xlabel="",
                ylabel=f"coefficient ({scale})", color="#2f4f6f")
    wide = hv.Segments(df, ["coefficient", "q2.5", "coefficient", "q97.5"]).opts(
        line_width=1.5, **opts)
    narrow = hv.Segments(df, ["coefficient", "q5", "coefficient", "q95"]).opts(
        line_width=5, **opts)
    mean = hv.Scatter(df, "coefficient", "mean").opts(size=7, color="#c0392b",
                                                      invert_axes=True)
    zero = hv.HLine(0).opts(color="gray", line_dash="dashed", line_width=1)
    return (wide * narrow * mean * zero).opts(
        title="Posterior mean with 90% (thick) and 95% (thin) credible intervals",
        width=WIDTH, height=height, invert_axes=True).redim.values(coefficient=names)


def traces(long: pd.DataFrame, scale: str) -> list:
    """One plot per coefficient, one line per chain."""
    plots = []
    for name, part in long.groupby("coefficient", sort=False):
        curves = {f"chain {c}": hv.Curve(d, "iteration", ("value", f"value ({scale})"))
                  for c, d in part.groupby("chain")}
        plots.append(hv.NdOverlay(curves, kdims="chain").opts(
            title=f"Trace: {name}", width=WIDTH // 2 + 60, height=220,
            legend_position="right", shared_axes=False))
    return plots


def autocorrelation(long: pd.DataFrame) -> hv.NdOverlay:
    """Autocorrelation by lag (mean over chains), one line per coefficient."""
    curves = {name: hv.Curve(part, "lag", ("autocorrelation", "autocorrelation"))
              for name, part in long.groupby("coefficient", sort=False)}
    return hv.NdOverlay(curves, kdims="coefficient").opts(
        title="Autocorrelation of the draws", width=WIDTH // 2, height=260,
        legend_position="top_right", ylim=(-0.2, 1.05))


def shrinkage(table: pd.DataFrame, scale: str) -> list:
    """Posterior mean against the probit MLE (the dashed line: no shrinkage), and the
    shrinkage factor kappa per slope (0 = left alone, 1 = shrunk to zero)."""
    kappa = hv.Bars(table, "coefficient", ("shrinkage", "shrinkage factor kappa")).opts(
        invert_axes=True, width=WIDTH // 2, height=max(220, 22 * len(table) + 80),
        title="Shrinkage factor (horseshoe)", color="#2f4f6f", ylim=(0, 1))
    if "MLE" not in table:
        return [kappa]
    points = hv.Scatter(table, ("MLE", f"probit MLE ({scale})"),
                        [("posterior mean", f"posterior mean ({scale})"), "coefficient"])
    diagonal = hv.Slope(1, 0).opts(color="gray", line_dash="dashed", line_width=1)
    scatter = (diagonal * points.opts(size=8, color="#c0392b")).opts(
        title="Posterior mean against the probit MLE", width=WIDTH // 2, height=320,
        xlabel=f"probit MLE ({scale})", ylabel=f"posterior mean ({scale})")
    return [scatter, kappa]
