"""The Sensitivity tab's plots: the specification curve, a forest of each axis varied alone,
and the negative controls' funnel with the empirical null's 95% region (EmpiricalCalibration's
plotCalibrationEffect).  Pure functions from engine tables."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from ..shell.plots import PALETTE, PLOT_WIDTH, left_border

Z95 = 1.959963984540054   # the standard normal's 97.5% quantile


def axis_forest(rows: pd.DataFrame) -> hv.Overlay:
    """The hazard ratio (95% CI) at each choice of each varied axis, the others at their base;
    one colour per axis, rows labelled "axis: choice" (and the coefficient of a split
    effect), on a log axis with a line at 1.  Failed variants are left out."""
    df = rows[np.isfinite(rows["hr"]) & (rows["hr"] > 0)].reset_index(drop=True)
    n = len(df)
    ys = np.arange(n)[::-1].astype(float)
    names = df["axis"] + ": " + df["choice"].astype(str)
    if df["coefficient"].nunique() > 1:        # a split effect: one row per interval
        names = names + " (" + df["coefficient"] + ")"
    parts = []
    for k, (axis, g) in enumerate(df.groupby("axis", sort=False)):
        y = ys[g.index]
        color = PALETTE[k % len(PALETTE)]
        ok = (np.isfinite(g["hr_lower"]) & np.isfinite(g["hr_upper"]) & (g["hr_lower"] > 0))
        parts.append(hv.Segments((g["hr_lower"][ok], y[ok.to_numpy()], g["hr_upper"][ok],
                                  y[ok.to_numpy()]), ["hazard ratio", "y", "x1", "y1"])
                     .opts(color=color, line_width=2))
        parts.append(hv.Scatter((g["hr"], y, names[g.index], g["variant"]), "hazard ratio",
                                ["y", "choice", "variant"], label=axis)
                     .opts(size=9, color=color, marker="square", tools=["hover"]))
    values = np.concatenate([df["hr"], df["hr_lower"], df["hr_upper"], [1.0]])
    values = values[np.isfinite(values) & (values > 0)]
    return hv.Overlay([*parts, hv.VLine(1.0).opts(color="black", line_dash="dashed")]).opts(
        title="Each axis varied alone (the other axes at their base; 95% CI)", logx=True,
        width=PLOT_WIDTH, height=max(180, 60 + 26 * n), yticks=list(zip(ys, names)),
        ylim=(-0.7, n - 0.3), xlim=(values.min() / 1.3, values.max() * 1.3), ylabel="",
        show_grid=True, legend_position="right", hooks=[left_border], toolbar="above")


def funnel_plot(controls: pd.DataFrame, null, estimate: dict | None = None) -> hv.Overlay:
    """Negative-control estimates (HR against standard error), the region holding 95% of them
    under the fitted empirical null N(mean, sd^2) (shaded: exp(mean +/- 1.96 sqrt(sd^2 +
    se^2))), the uncalibrated p = 0.05 bounds (dashed: exp(+/- 1.96 se)) and the estimate of
    interest (log_rr, se) if given."""
    ok = controls[np.isfinite(controls["log_rr"]) & np.isfinite(controls["se"])]
    top = 1.25 * max(float(ok["se"].max()) if len(ok) else 0.5,
                     float(estimate["se"]) if estimate is not None else 0.0)
    se = np.linspace(0.0, top, 60)
    half = Z95 * np.sqrt(null.sd ** 2 + se ** 2)
    edge = np.column_stack([np.exp(np.r_[null.mean - half, (null.mean + half)[::-1]]),
                            np.r_[se, se[::-1]]])
    region = hv.Polygons([edge], ["hazard ratio", "standard error"]).opts(
        color=PALETTE[3], alpha=0.2, line_alpha=0)
    dashed = [hv.Curve((np.exp(s * Z95 * se), se), "hazard ratio", "standard error")
              .opts(color="gray", line_dash="dashed") for s in (-1, 1)]
    points = hv.Scatter((np.exp(ok["log_rr"]), ok["se"], ok["outcome"]), "hazard ratio",
                        ["standard error", "outcome"], label="negative controls").opts(
        size=8, color=PALETTE[0], tools=["hover"])
    parts = [region, *dashed, points]
    if estimate is not None:
        parts.append(hv.Scatter(([np.exp(estimate["log_rr"])], [estimate["se"]]),
                                "hazard ratio", "standard error", label="the base analysis")
                     .opts(size=11, color=PALETTE[1], marker="diamond"))
    return hv.Overlay(parts).opts(
        title=f"Negative controls and the empirical null N({null.mean:.3f}, {null.sd:.3f}²): "
              "95% region shaded, uncalibrated p = 0.05 dashed",
        logx=True, width=PLOT_WIDTH, height=380, ylim=(0, top), show_grid=True,
        legend_position="top_right", toolbar="above")


def specification_curve(table: pd.DataFrame) -> hv.Overlay:
    """The hazard ratio of every variant of a sensitivity study, sorted, with its 95% CI (a
    specification curve; hover names the variant's choices), on a log axis with a line at 1.
    Failed variants (no estimate) are left out."""
    t = table[np.isfinite(table["hr"]) & (table["hr"] > 0)].sort_values("hr")
    rank = np.arange(1, len(t) + 1, dtype=float)
    axes = [c for c in ("covariates", "subgroup", "ties", "strata", "penalty", "cut_points",
                        "follow_up") if c in t.columns and t[c].nunique() > 1]
    choice = t[axes].astype(str).agg("; ".join, axis=1) if axes else pd.Series("", t.index)
    ci = np.isfinite(t["hr_lower"]) & np.isfinite(t["hr_upper"]) & (t["hr_lower"] > 0)
    segments = hv.Segments((rank[ci.to_numpy()], t["hr_lower"][ci], rank[ci.to_numpy()],
                            t["hr_upper"][ci]), ["variant (sorted)", "hazard ratio", "x1", "y1"]
                           ).opts(color="#1f77b4", alpha=0.6, line_width=2)
    points = hv.Scatter((rank, t["hr"], choice, t["variant"]), "variant (sorted)",
                        ["hazard ratio", "choices", "variant"]).opts(
        size=6, color="#1f77b4", tools=["hover"])
    values = np.concatenate([t["hr"], t["hr_lower"][ci], t["hr_upper"][ci], [1.0]])
    shown, total = t["variant"].nunique(), table["variant"].nunique()
    what = (f"{shown} variants" if len(t) == shown else f"{len(t)} estimates of {shown} variants")
    what += f" ({total - shown} failed, left out)" if total > shown else ""
    return (segments * points * hv.HLine(1.0).opts(color="black", line_dash="dashed")).opts(
        title=f"Specification curve: {what}, 95% CI", logy=True, width=PLOT_WIDTH,
        height=340, ylim=(values.min() / 1.2, values.max() * 1.2), show_grid=True,
        toolbar="above")
