"""The Results sections' plots: covariate-adjusted curves and a term's hazard-ratio curve.
Pure functions from engine tables."""

from __future__ import annotations

import holoviews as hv
import pandas as pd

from ..shell.plots import PALETTE, PLOT_WIDTH, left_border, steps


def adjusted_plot(curves: pd.DataFrame, treatment: str, at: float | None = None,
                  time_label: str = "time") -> hv.Overlay:
    """Covariate-adjusted survival (or, from a Fine-Gray fit, cumulative incidence) by
    treatment level from engine.adjusted_curves' curves table: steps with their band, and a
    dashed line at the time of the reported difference."""
    value = "cif" if "cif" in curves.columns else "survival"
    parts = []
    for k, (level, g) in enumerate(curves.groupby("level", sort=False)):
        color = PALETTE[k % len(PALETTE)]
        g = g.dropna(subset=[value])
        x = g["time"].to_numpy(float)
        label = f"{treatment} = {level:g}" if isinstance(level, float) else f"{treatment} = {level}"
        if g["lower"].notna().any():
            xs, lower, upper = steps(x, g["lower"].to_numpy(float), g["upper"].to_numpy(float))
            parts.append(hv.Area((xs, lower, upper), time_label, ["lower", "upper"], label=label)
                         .opts(color=color, alpha=0.15, line_alpha=0))
        parts.append(hv.Curve((x, g[value].to_numpy(float)), time_label, value, label=label)
                     .opts(interpolation="steps-post", color=color, line_width=2))
    if at is not None:
        parts.append(hv.VLine(at).opts(color="gray", line_dash="dashed"))
    what = "cumulative incidence" if value == "cif" else "survival"
    return hv.Overlay(parts).opts(
        title=f"Adjusted {what} by {treatment} (g-formula, 95% CI)", ylim=(0, 1.02),
        width=PLOT_WIDTH, height=340, show_grid=True,
        legend_position="bottom_left" if value == "survival" else "top_left", ylabel=what,
        toolbar="above", hooks=[left_border])


def effect_plot(curve: pd.DataFrame, variable: str, reference: float,
                ratio: str = "hazard ratio") -> hv.Overlay:
    """Hazard ratio against an exposure from engine.effect_curve (columns variable, hr, lower,
    upper): the curve, its pointwise 95% band, a line at HR 1 and one at the reference."""
    x = curve[variable].to_numpy(float)
    band = hv.Area((x, curve["lower"].to_numpy(float), curve["upper"].to_numpy(float)),
                   variable, ["lower", "upper"]).opts(color=PALETTE[0], alpha=0.2, line_alpha=0)
    line = hv.Curve((x, curve["hr"].to_numpy(float)), variable, ratio).opts(
        color=PALETTE[0], line_width=2)
    return (band * line * hv.HLine(1).opts(color="gray", line_dash="dashed")
            * hv.VLine(reference).opts(color="gray", line_dash="dotted")).opts(
        title=f"{ratio.capitalize()} by {variable} (reference {reference:g}, 95% CI)",
        logy=True, ylabel=ratio,
        width=PLOT_WIDTH // 2, height=320, show_grid=True, toolbar="above")
