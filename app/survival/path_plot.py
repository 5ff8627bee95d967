"""The regularisation path as a plot: coefficients against lambda (log axis) over the deviance
ratio with the number of non-zero coefficients (df) at each fit; the chosen lambda dashed.
A pure function of engine.path's result: no numerics here."""

from __future__ import annotations

import holoviews as hv
import numpy as np

from ..shell.plots import PALETTE, PLOT_WIDTH, left_border

MAX_CURVES = 20   # the covariates with the largest coefficients along the path


def path_plot(result, chosen: float | None, penalty: str) -> hv.Layout:
    """``result``: engine.PathResult; ``chosen``: the lambda of the next fit (or None)."""
    lam = np.asarray(result.lambdas, float)
    coef = result.coef
    size = coef.abs().max(axis=0).sort_values(ascending=False)
    shown = [c for c in size.index[:MAX_CURVES] if size[c] > 0]
    curves = [hv.Curve((lam, coef[c].to_numpy(float)), "lambda", "coefficient",
                       label=str(c)).opts(color=PALETTE[k % len(PALETTE)], line_width=2)
              for k, c in enumerate(shown)]
    zero = hv.HLine(0.0).opts(color="#888888", line_width=1)
    top = hv.Overlay([*curves, zero])
    ratio = hv.Curve((lam, result.dev_ratio), "lambda", "deviance ratio").opts(
        color=PALETTE[0], line_width=2)
    dots = hv.Scatter((lam, result.dev_ratio), "lambda", "deviance ratio").opts(
        color=PALETTE[0], size=6)
    df = hv.Labels((lam, result.dev_ratio, [f"{int(d)}" for d in result.df]),
                   ["lambda", "deviance ratio"], "df").opts(text_font_size="9pt",
                                                            text_baseline="bottom",
                                                            text_color="#444444")
    bottom = ratio * dots * df
    if chosen is not None and chosen > 0:
        mark = hv.VLine(float(chosen)).opts(color=PALETTE[1], line_dash="dashed", line_width=2)
        top, bottom = top * mark, bottom * mark
    more = len(size) - len(shown)
    title = (f"{penalty} path: coefficients (lambda_max {result.lambda_max:.4g}"
             + (f"; {len(shown)} largest of {len(size)} shown" if more > 0 else "")
             + (f"; dashed: lambda {chosen:.4g}" if chosen else "") + ")")
    top = top.opts(title=title, logx=True, width=PLOT_WIDTH, height=360, show_grid=True,
                   xlabel="lambda", ylabel="coefficient", padding=(0.02, 0.1),
                   legend_position="right", toolbar="above", hooks=[left_border])
    bottom = bottom.opts(title="Deviance ratio, labelled with df (non-zero coefficients)",
                         logx=True, width=PLOT_WIDTH, height=220, show_grid=True,
                         xlabel="lambda", ylabel="deviance ratio", padding=(0.02, 0.2),
                         toolbar="above", hooks=[left_border])
    return (top + bottom).cols(1)
