"""The Data page's plots of propensity-score weights (the recode view): the overlap of the
scores by arm and the love plot of balance. Pure functions from engine tables."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from ..shell.plots import IMBALANCE, PALETTE, PLOT_WIDTH, score_by_arm


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
    """The propensity score's distribution in each arm: where the arms do not overlap, weights
    explode or persons are trimmed."""
    return score_by_arm([("treated", ps[treatment == 1]), ("control", ps[treatment == 0])],
                        "propensity score", "Propensity score by arm", bins)
