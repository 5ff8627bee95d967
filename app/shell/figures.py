"""Figures for a paper: Kaplan-Meier with a risk table, cumulative incidence and forest plots as
matplotlib figures, written on the server as PNG or SVG.

Pure functions from the tables engine computed (no numerics here), drawn with matplotlib's
object API (``Figure``, no pyplot state, so worker threads may draw at once) and saved with the
Agg and SVG renderers: no browser, no display. The Describe tab shows the same SVG it offers
for download. SVG text stays text (``svg.fonttype = none``), editable in a drawing program.
"""

from __future__ import annotations

import io

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .plots import PALETTE, nice_ticks

FORMATS = ("png", "svg")
DPI = 200
WIDTH = 7.5           # inches: a full-width figure in most journals
CURVE_HEIGHT = 4.2
ROW_HEIGHT = 0.22     # inches per risk-table row
MAX_STEPS = 5_000     # points per drawn curve
MAX_TICKS = 400       # censor marks per curve


def save(fig: Figure, fmt: str, tight: bool = True) -> bytes:
    """The figure as PNG or SVG bytes, cropped to what is drawn (no label clipped) unless
    ``tight`` is False (a figure with margins of its own: one drawing pass instead of two)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    buffer = io.BytesIO()
    crop = {"bbox_inches": "tight", "pad_inches": 0.1} if tight else {}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "survscan"}):
        fig.savefig(buffer, format=fmt, dpi=DPI, **crop,
                    metadata={"Date": None} if fmt == "svg" else None)
    return buffer.getvalue()


def svg_markup(fig: Figure, tight: bool = True) -> str:
    """The figure's SVG from its <svg> element on (no XML prolog), as Panel's SVG pane takes
    it (it base64-encodes it into an <img>, so nothing in it runs on the page)."""
    text = save(fig, "svg", tight).decode()
    return text[text.index("<svg"):]


def _steps(x, y):
    """Staircase (steps-post) coordinates."""
    return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]


def _thin(frame, limit):
    if len(frame) <= limit:
        return frame
    return frame.iloc[np.unique(np.linspace(0, len(frame) - 1, limit).astype(int))]


def km_figure(table: pd.DataFrame, risk: pd.DataFrame | None, medians: pd.Series | None = None,
              *, time_label: str = "time", note: str = "", ci: bool = True,
              censor_marks: bool = True, kmunicate: bool = False,
              window: tuple[float, float] | None = None,
              title: str = "Kaplan-Meier") -> Figure:
    """Kaplan-Meier curves (steps), optional CI bands, censor marks and dashed median lines,
    the test in a corner, and under the curves a risk table aligned on the same time axis.

    table : engine.KaplanMeier.table with shown group names (time, group, survival, lower,
        upper, censored)
    risk : group, time, at_risk, events, censored at the table's times, or None for no table;
        ``kmunicate`` shows at risk and the events and censored so far (``risk`` then holds
        counts from time 0, describing.risk_counts), as Morris et al. 2019 (KMunicate) advise
    medians : group -> median survival, drawn as dashed lines (NaN: not reached)
    """
    levels = list(dict.fromkeys(table["group"]))
    lo, hi = window if window is not None else (0.0, float(table["time"].max()))
    pad = 0.02 * (hi - lo if hi > lo else 1.0)
    counts = ("at_risk", "events", "censored") if kmunicate else ("at_risk",)
    n_rows = 0 if risk is None else len(levels) * len(counts)
    table_height = 0.0 if risk is None else 0.45 + ROW_HEIGHT * (n_rows + len(levels) * kmunicate)
    fig = Figure(figsize=(WIDTH, CURVE_HEIGHT + table_height), layout="constrained")
    if risk is None:
        ax = fig.add_subplot()
    else:
        ax, ax_table = fig.subplots(2, 1, sharex=True,
                                    gridspec_kw={"height_ratios": [CURVE_HEIGHT, table_height]})
    for k, level in enumerate(levels):
        color = PALETTE[k % len(PALETTE)]
        g = table[table["group"] == level]
        drawn = _thin(g, MAX_STEPS)
        x = np.r_[min(0.0, lo), drawn["time"].to_numpy(float)]
        xs, ys = _steps(x, np.r_[1.0, drawn["survival"].to_numpy(float)])
        ax.plot(xs, ys, color=color, linewidth=1.8, label=str(level))
        if ci:
            band = drawn[["lower", "upper"]].ffill().fillna(1.0)
            _, lower = _steps(x, np.r_[1.0, band["lower"].to_numpy(float)])
            _, upper = _steps(x, np.r_[1.0, band["upper"].to_numpy(float)])
            ax.fill_between(xs, lower, upper, color=color, alpha=0.15, linewidth=0)
        if censor_marks:
            marks = _thin(g[g["censored"] > 0], MAX_TICKS)
            ax.plot(marks["time"], marks["survival"], linestyle="none", marker="|",
                    markersize=7, color=color)
        if medians is not None and level in medians.index and np.isfinite(medians[level]):
            m = float(medians[level])
            ax.plot([lo - pad, m, m], [0.5, 0.5, 0.0], color=color, linestyle="--",
                    linewidth=0.9)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylabel("Survival probability")
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", frameon=False, fontsize=9)
    if note:
        ax.text(0.02, 0.04, note, transform=ax.transAxes, fontsize=9, va="bottom", ha="left",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    if risk is None:
        ax.set_xlabel(time_label)
        return fig
    _risk_table(ax_table, risk, levels, counts, time_label)
    return fig


def _risk_table(ax, risk, levels, counts, time_label):
    """Counts under the curves: one row per group (and count), numbers at the times."""
    names = {"at_risk": "At risk", "events": "Events", "censored": "Censored"}
    rows, y = [], 0
    for k, level in enumerate(levels):
        part = risk[risk["group"] == level].sort_values("time")
        color = PALETTE[k % len(PALETTE)]
        if len(counts) > 1:          # KMunicate: a heading per group, then its counts
            rows.append((y, str(level), color, True))
            y += 1
        for what in counts:
            values = part[what].to_numpy(float)
            label = names[what] if len(counts) > 1 else str(level)
            rows.append((y, label, color, False))
            for t, value in zip(part["time"], values):
                ax.text(t, y, f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}",
                        ha="center", va="center", fontsize=8.5, color=color)
            y += 1
    ax.set_ylim(y - 0.5, -0.5)
    ax.set_yticks([r[0] for r in rows], [r[1] for r in rows], fontsize=8.5)
    for tick, (_, _, color, heading) in zip(ax.get_yticklabels(), rows):
        tick.set_color(color)
        tick.set_fontweight("bold" if heading or len(counts) == 1 else "normal")
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(time_label)
    ax.set_title("Number at risk" + (", events and censored so far" if len(counts) > 1 else ""),
                 loc="left", fontsize=9)


def risk_times(lo: float, hi: float) -> list[float]:
    """The times of the risk table: round numbers from lo to hi."""
    return nice_ticks(max(lo, 0.0), hi)


def _step_band(ax, g: pd.DataFrame, value: str, color, label: str, ci: bool = True,
               fill: float = 0.0) -> None:
    """One group's step curve (columns time, ``value``) with its band (lower, upper; a gap
    carries the last limit forward, ``fill`` before the first)."""
    x = g["time"].to_numpy(float)
    xs, ys = _steps(x, g[value].to_numpy(float))
    ax.plot(xs, ys, color=color, linewidth=1.8, label=label)
    if ci and g["lower"].notna().any():
        band = g[["lower", "upper"]].ffill().fillna(fill)
        _, lower = _steps(x, band["lower"].to_numpy(float))
        _, upper = _steps(x, band["upper"].to_numpy(float))
        ax.fill_between(xs, lower, upper, color=color, alpha=0.15, linewidth=0)


def cif_figure(curves: pd.DataFrame, *, cause, time_label: str = "time", note: str = "",
               ci: bool = True, title: str | None = None) -> Figure:
    """Cumulative incidence (Aalen-Johansen) of one cause by group, with Gray's test in a
    corner; no Kaplan-Meier (1 - KM overstates the incidence under competing risks)."""
    fig = Figure(figsize=(WIDTH, CURVE_HEIGHT), layout="constrained")
    ax = fig.add_subplot()
    for k, (level, g) in enumerate(curves.groupby("group", sort=True)):
        _step_band(ax, g, "cif", PALETTE[k % len(PALETTE)], str(level), ci)
    top = float(np.nanmax(curves["upper"].to_numpy(float))) if ci else float(curves["cif"].max())
    ax.set_ylim(0, min(1.02, max(0.1, 1.15 * top)))
    ax.set_xlim(left=0)
    ax.set_xlabel(time_label)
    ax.set_ylabel(f"Cumulative incidence of cause {cause}")
    ax.set_title(title or f"Cumulative incidence of cause {cause} (Aalen-Johansen)", loc="left",
                 fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", frameon=False, fontsize=9)
    if note:
        ax.text(0.98, 0.04, note, transform=ax.transAxes, fontsize=9, va="bottom", ha="right",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    return fig


def forest_figure(summary: pd.DataFrame, *, ratio: str = "HR",
                  title: str = "Hazard ratios (95% CI)", headings: bool = False) -> Figure:
    """Ratio with its CI per coefficient on a log axis, the numbers in a column on the right;
    ``summary`` is FitResult.summary (hr, hr_lower, hr_upper), or with ``headings`` subgroup
    rows where a row without a ratio is a heading (its label alone)."""
    df = summary.reset_index()
    estimated = np.isfinite(df["hr"].astype(float)) & (df["hr"].astype(float) > 0)
    df = (df if headings else df[estimated]).reset_index(drop=True)
    n = len(df)
    fig = Figure(figsize=(WIDTH, 1.0 + 0.32 * max(n, 1)), layout="constrained")
    ax = fig.add_subplot()
    ys = np.arange(n)[::-1]
    df[["hr", "hr_lower", "hr_upper"]] = df[["hr", "hr_lower", "hr_upper"]].astype(float)
    finite = np.isfinite(df["hr_lower"]) & np.isfinite(df["hr_upper"]) & (df["hr_lower"] > 0)
    ax.hlines(ys[finite], df.loc[finite, "hr_lower"], df.loc[finite, "hr_upper"],
              color=PALETTE[0], linewidth=1.6)
    ax.plot(df["hr"], ys, linestyle="none", marker="s", color=PALETTE[0], markersize=6)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=0.9)
    ax.set_xscale("log")
    ax.set_yticks(ys, df["covariate"].astype(str))
    for tick, estimate in zip(ax.get_yticklabels(), np.isfinite(df["hr"])):
        tick.set_fontweight("normal" if estimate else "bold")   # subgroup headings
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel(f"{ratio} (log scale)")
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    text = [f"{h:.2f} ({a:.2f}, {b:.2f})" if ok else f"{h:.2f}" if np.isfinite(h) else ""
            for h, a, b, ok in zip(df["hr"], df["hr_lower"], df["hr_upper"], finite)]
    for y, t in zip(ys, text):
        ax.annotate(t, xy=(1.02, y), xycoords=("axes fraction", "data"), va="center",
                    fontsize=8.5)
    ax.annotate(f"{ratio} (95% CI)", xy=(1.02, n - 0.45), xycoords=("axes fraction", "data"),
                va="bottom", fontsize=8.5, fontweight="bold")
    return fig


def beta_t_figure(smooth: pd.DataFrame, residuals: pd.DataFrame, coef: pd.Series,
                  tests: pd.DataFrame, *, time_label: str = "time", columns: int = 3) -> Figure:
    """beta(t) per coefficient: the scaled Schoenfeld residuals (dots), their smooth with a
    +/- 2 SE band (engine.ph_smooth), the Cox estimate (dotted) and 0 (grey), the PH test's
    p in each title; a flat smooth around the estimate is proportional hazards."""
    names = list(dict.fromkeys(smooth["covariate"]))
    rows = -(-len(names) // columns)
    height = 2.3 * rows + 0.4
    fig = Figure(figsize=(WIDTH, height))
    # fixed margins in inches, not the constrained layout: a served page draws this figure
    # after every Cox fit, and the layout's measuring passes were four fifths of its 0.5 s
    fig.subplots_adjust(left=0.6 / WIDTH, right=1 - 0.15 / WIDTH, bottom=0.5 / height,
                        top=1 - 0.3 / height, wspace=0.45, hspace=0.6)
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    for ax, name in zip(axes, names):
        part = smooth[smooth["covariate"] == name]
        ax.plot(residuals["time"], residuals[name], linestyle="none", marker=".", markersize=3,
                color="#999999", alpha=0.6)
        ax.plot(part["time"], part["beta"], color=PALETTE[0], linewidth=1.8)
        ax.plot(part["time"], part["lower"], color=PALETTE[0], linestyle="--", linewidth=0.9)
        ax.plot(part["time"], part["upper"], color=PALETTE[0], linestyle="--", linewidth=0.9)
        ax.axhline(float(coef.get(name, np.nan)), color=PALETTE[1], linestyle=":", linewidth=1.2)
        ax.axhline(0.0, color="#bbbbbb", linewidth=0.8)
        low, high = part["lower"].min(), part["upper"].max()
        span = high - low
        ax.set_ylim(low - 0.3 * span, high + 0.3 * span)   # the band, not every outlying dot
        term = name if name in tests.index else name.split("[")[0]
        p = tests.loc[term, "p"] if term in tests.index else np.nan
        ax.set_title(f"{name}: PH test p = {p:.3g}", fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
        ax.set_xlabel(time_label, fontsize=8)
        ax.set_ylabel("beta(t)", fontsize=8)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    return fig


def specification_figure(table: pd.DataFrame, title: str = "") -> Figure:
    """A sensitivity study's specification curve: every variant's hazard ratio, sorted, with
    its 95% CI, on a log axis with a line at 1 (as sensitivity/plots.py's specification_curve);
    failed variants are left out."""
    t = table[np.isfinite(table["hr"]) & (table["hr"] > 0)].sort_values("hr")
    rank = np.arange(1, len(t) + 1)
    fig = Figure(figsize=(WIDTH, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ci = (np.isfinite(t["hr_lower"]) & np.isfinite(t["hr_upper"]) & (t["hr_lower"] > 0)).to_numpy()
    ax.vlines(rank[ci], t["hr_lower"][ci], t["hr_upper"][ci], color=PALETTE[0], alpha=0.6,
              linewidth=1.4)
    ax.plot(rank, t["hr"], linestyle="none", marker="o", markersize=3.5, color=PALETTE[0])
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.9)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("variant (sorted by hazard ratio)")
    ax.set_ylabel("hazard ratio (95% CI)")
    ax.set_title(title or f"Specification curve: {len(t)} estimates", loc="left", fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    return fig


def adjusted_figure(curves: pd.DataFrame, treatment: str, at: float | None = None, *,
                    time_label: str = "time") -> Figure:
    """Covariate-adjusted survival (or a Fine-Gray fit's cumulative incidence) by treatment
    level from engine.adjusted_curves' curves table, with the bands and a dashed line at the
    time of the reported difference (as survival/plots.py's adjusted_plot)."""
    value = "cif" if "cif" in curves.columns else "survival"
    fig = Figure(figsize=(WIDTH, CURVE_HEIGHT), layout="constrained")
    ax = fig.add_subplot()
    for k, (level, g) in enumerate(curves.groupby("level", sort=False)):
        g = g.dropna(subset=[value])
        label = f"{treatment} = {level:g}" if isinstance(level, float) else f"{treatment} = {level}"
        _step_band(ax, g, value, PALETTE[k % len(PALETTE)], label,
                   fill=1.0 if value == "survival" else 0.0)
    if at is not None:
        ax.axvline(at, color="gray", linestyle="--", linewidth=0.9)
    what = "cumulative incidence" if value == "cif" else "survival"
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.set_xlabel(time_label)
    ax.set_ylabel(f"Adjusted {what}")
    ax.set_title(f"Adjusted {what} by {treatment} (g-formula, 95% CI)", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left" if value == "survival" else "upper left", frameon=False,
              fontsize=9)
    return fig


def effect_figure(curve: pd.DataFrame, variable: str, reference: float,
                  ratio: str = "hazard ratio") -> Figure:
    """A spline's hazard ratio against its variable from engine.effect_curve (columns
    variable, hr, lower, upper) with its pointwise 95% band, on a log axis with lines at 1 and
    at the reference (as survival/plots.py's effect_plot)."""
    x = curve[variable].to_numpy(float)
    fig = Figure(figsize=(WIDTH * 0.6, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.fill_between(x, curve["lower"].to_numpy(float), curve["upper"].to_numpy(float),
                    color=PALETTE[0], alpha=0.2, linewidth=0)
    ax.plot(x, curve["hr"].to_numpy(float), color=PALETTE[0], linewidth=1.8)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=0.9)
    ax.axvline(reference, color="gray", linestyle=":", linewidth=0.9)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel(variable)
    ax.set_ylabel(f"{ratio} (95% CI)")
    ax.set_title(f"{ratio.capitalize()} by {variable} (reference {reference:g})", loc="left",
                 fontsize=10)
    ax.grid(alpha=0.3)
    return fig


def term_figure(points: pd.DataFrame, curve: pd.DataFrame, variable: str, term: str,
                note: str = "") -> Figure:
    """R's termplot with partial residuals (engine.term_plot): the part of the linear
    predictor of the variable's term (line) with its pointwise 95% band (shaded), and the
    partial residuals (dots: the martingale residual plus that part), whose scatter around
    the line says whether the shape the fit chose agrees with the data.  ``points`` (x,
    partial) are the rows to draw, ``curve`` (x, fit, lower, upper) in x order."""
    height = 3.4 + (0.3 if note else 0.0)
    fig = Figure(figsize=(WIDTH, height))
    fig.subplots_adjust(left=0.75 / WIDTH, right=1 - 0.15 / WIDTH,
                        bottom=(0.55 + (0.3 if note else 0.0)) / height, top=1 - 0.35 / height)
    ax = fig.subplots()
    ax.plot(points["x"], points["partial"], linestyle="none", marker=".", markersize=3,
            color="#999999", alpha=0.6)
    ax.fill_between(curve["x"], curve["lower"], curve["upper"], color=PALETTE[0], alpha=0.2,
                    linewidth=0)
    ax.plot(curve["x"], curve["fit"], color=PALETTE[0], linewidth=1.8)
    ax.set_title(f"Partial residuals and the term {term}", fontsize=9, loc="left")
    ax.set_xlabel(variable, fontsize=8)
    ax.set_ylabel("part of the linear predictor (log HR)", fontsize=8)
    ax.tick_params(labelsize=8)
    if note:
        fig.text(0.75 / WIDTH, 0.08 / height, note, fontsize=7, color="#555555")
    return fig


def residuals_figure(points: pd.DataFrame, smooth: pd.DataFrame, covariate: str,
                     influence: pd.DataFrame, coefficient: str, note: str = "",
                     null: bool = False) -> Figure:
    """Two panels of a Cox fit's residuals (engine.functional_form, engine.residuals): the
    martingale residuals against a covariate (dots) with their lowess smooth (line), whose
    bend shows the covariate's form, and each row's dfbeta / SE on a coefficient by row (the
    change in the coefficient when the row is left out, in standard errors).  ``points`` (x,
    martingale) and ``influence`` (row, dfbetas) are the rows to draw, ``smooth`` (x, smooth)
    the curve in x order; ``note`` goes under the figure; ``null``: the martingale residuals
    are the model's without covariates."""
    height = 3.4 + (0.3 if note else 0.0)
    fig = Figure(figsize=(WIDTH, height))
    fig.subplots_adjust(left=0.75 / WIDTH, right=1 - 0.15 / WIDTH,
                        bottom=(0.55 + (0.3 if note else 0.0)) / height, top=1 - 0.35 / height,
                        wspace=0.35)
    form, spread = fig.subplots(1, 2)
    form.plot(points["x"], points["martingale"], linestyle="none", marker=".", markersize=3,
              color="#999999", alpha=0.6)
    form.plot(smooth["x"], smooth["smooth"], color=PALETTE[1], linewidth=1.8)
    form.axhline(0.0, color="#bbbbbb", linewidth=0.8)
    form.set_title(f"Martingale residuals{' (no covariates)' if null else ''} against "
                   f"{covariate}", fontsize=9, loc="left")
    form.set_xlabel(covariate, fontsize=8)
    form.set_ylabel("martingale residual", fontsize=8)
    spread.vlines(influence["row"], 0.0, influence["dfbetas"], color=PALETTE[0], linewidth=0.8)
    spread.axhline(0.0, color="#bbbbbb", linewidth=0.8)
    spread.set_title(f"Influence on {coefficient}", fontsize=9, loc="left")
    spread.set_xlabel("row", fontsize=8)
    spread.set_ylabel("dfbeta / SE", fontsize=8)
    for ax in (form, spread):
        ax.tick_params(labelsize=8)
    if note:
        fig.text(0.75 / WIDTH, 0.08 / height, note, fontsize=7, color="#555555")
    return fig
