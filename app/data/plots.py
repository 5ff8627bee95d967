"""The Data page's plots of propensity-score weights (the recode view): the overlap of the
scores by arm and the love plot of balance. Pure functions from engine tables."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from ..shell.plots import IMBALANCE, PALETTE, PLOT_WIDTH


def love_plot(balance: pd.DataFrame) -> hv.Overlay:
    """|difference| between the arms of each propensity-score covariate, before and after
    weighting (cobalt's love plot, from engine.propensity_weights' balance table):
    standardised for continuous covariates, proportions for binary ones; dashed at 0.1."""
    df = balance[balance["type"] != "distance"]
    ys = np.arange(len(df))[::-1]
    parts = [hv.Scatter((df[column].abs().to_numpy(), ys, df["covariate"]), "|difference|",
                        ["row", "covariate"], label=label)
             .opts(color=PALETTE[k], size=7, tools=["hover"])
             for k, (label, column) in enumerate((("weighted", "diff_after"),
                                                  ("unweighted", "diff_before")))]
    top = max(float(np.nanmax(df["diff_before"].abs())), 2 * IMBALANCE)
    return hv.Overlay([*parts, hv.VLine(IMBALANCE).opts(color="gray", line_dash="dashed")]).opts(
        title="Covariate balance (dashed: 0.1)", width=PLOT_WIDTH // 2,
        height=max(240, 28 * len(df) + 90), xlim=(0, top * 1.05), ylim=(-0.7, len(df) - 0.3),
        yticks=list(zip(ys, df["covariate"])), ylabel="", show_grid=True,
        legend_position="bottom_right", toolbar="above")


def ps_overlap_plot(ps: np.ndarray, treatment: np.ndarray, bins: int = 40) -> hv.Overlay:
    """The propensity score's distribution in each arm (density histograms, overlaid): where
    the arms do not overlap, weights explode or persons are trimmed."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    parts = []
    for k, (arm, value) in enumerate((("treated", 1), ("control", 0))):
        density, _ = np.histogram(ps[treatment == value], bins=edges, density=True)
        parts.append(hv.Histogram((edges, density), kdims=["propensity score"],
                                  vdims=["density"], label=arm)
                     .opts(color=PALETTE[k], alpha=0.45, line_alpha=0))
    return hv.Overlay(parts).opts(
        title="Propensity score by arm", width=PLOT_WIDTH // 2, height=320, xlim=(0, 1),
        legend_position="top_left", show_grid=True, toolbar="above")
