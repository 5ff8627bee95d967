"""The OMOP page's plots: the preference-score distribution, covariate balance and
Kaplan-Meier by arm of a study. Pure functions from the tables engine.cdm computed."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from ..shell.plots import IMBALANCE, PALETTE, PLOT_WIDTH, score_by_arm, steps

ARMS = (("target", 1), ("comparator", 0))


def preference_plot(cohort: pd.DataFrame, bins: int = 40) -> hv.Overlay:
    """Preference-score distribution by arm (density histograms, overlaid)."""
    return score_by_arm([(arm, cohort.loc[cohort["treatment"] == value, "preference"])
                         for arm, value in ARMS], "preference score",
                        "Preference score by arm", bins)


def balance_plot(stratified: pd.DataFrame, matched: pd.DataFrame,
                 weighted: pd.DataFrame | None = None) -> hv.Overlay:
    """|std diff| before (x) against after (y) adjustment, one point per covariate, for the
    PS-stratified, matched and (when the study weighted) weighted analyses."""
    parts = []
    tables = [("PS stratified", stratified), ("PS matched", matched)]
    if weighted is not None:
        tables.append(("PS weighted", weighted))
    for k, (label, df) in enumerate(tables):
        before, after = df["std_diff_before"].abs(), df["std_diff_after"].abs()
        parts.append(hv.Scatter((before, after, df["covariate"]), "|std diff| before",
                                ["|std diff| after", "covariate"], label=label)
                     .opts(color=PALETTE[k], size=6, alpha=0.6, tools=["hover"]))
    top = max(float(np.nanmax(stratified["std_diff_before"].abs())), 2 * IMBALANCE)
    parts += [hv.VLine(IMBALANCE).opts(color="gray", line_dash="dashed"),
              hv.HLine(IMBALANCE).opts(color="gray", line_dash="dashed")]
    return hv.Overlay(parts).opts(
        title="Covariate balance (dashed: 0.1)", width=PLOT_WIDTH // 2, height=320,
        xlim=(0, top * 1.05), ylim=(0, top * 1.05), legend_position="top_left",
        show_grid=True, toolbar="above")


def km_by_arm_plot(km: pd.DataFrame, title: str) -> hv.Overlay:
    """Kaplan-Meier by arm from engine.cdm.kaplan_meier_by_arm's table (95% CI bands)."""
    parts = []
    for k, (arm, _) in enumerate(ARMS):
        g = km[km["arm"] == arm]
        if g.empty:
            continue
        x = g["time"].to_numpy(float)
        xs, lower, upper = steps(x, g["lower"].to_numpy(float), g["upper"].to_numpy(float))
        parts.append(hv.Area((xs, lower, upper), "days", ["lower", "upper"], label=arm)
                     .opts(color=PALETTE[k], alpha=0.15, line_alpha=0))
        parts.append(hv.Curve((x, g["survival"].to_numpy(float)), "days", "survival",
                              label=arm)
                     .opts(interpolation="steps-post", color=PALETTE[k], line_width=2))
    return hv.Overlay(parts).opts(title=title, width=PLOT_WIDTH // 2, height=320,
                                  show_grid=True, legend_position="bottom_left",
                                  ylabel="outcome-free survival", toolbar="above")
