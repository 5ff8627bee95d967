"""Results view: Kaplan-Meier curves with an at-risk table, hazard ratios with a forest plot,
and the comparison of kept fits.

The view is a list of sections (``ResultsView.sections``); cumulative incidence (Fine-Gray) and
the cross-validation curve join it as further sections when the engine has them.
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
from lifelines import KaplanMeierFitter
from panel.viewable import Viewer

import engine

from ..store import Store
from ._common import notify, number_formatters, table

NO_GROUP = "(all together)"
MAX_GROUPS = 8
MAX_STEPS = 2_000   # points per drawn curve (every step is kept below this)
MAX_TICKS = 400     # censor ticks per curve (evenly thinned above this)
PLOT_WIDTH = 900
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf")


# ----------------------------------------------------------------------------------------
# Kaplan-Meier
def km_groups(store: Store, group: str | None) -> pd.Series:
    """Group labels per row: the column's levels; a many-valued number is cut in quartiles."""
    if not group or group == NO_GROUP:
        return pd.Series("all", index=range(store.n_rows))
    values = store.column(group).reset_index(drop=True)
    if values.nunique() > MAX_GROUPS and pd.api.types.is_numeric_dtype(values):
        quartile = pd.qcut(values, 4, duplicates="drop")
        return (f"{group} " + quartile.astype(str)).astype(str)
    return (f"{group} = " + values.astype(str)).astype(str)


def fit_km(store: Store, group: str | None) -> dict:
    """One lifelines KaplanMeierFitter per group (with ``entry=`` for start/stop rows)."""
    frame = store.km_frame().reset_index(drop=True)
    labels = km_groups(store, group)
    levels = sorted(labels.unique(), key=str)
    if len(levels) > MAX_GROUPS:
        raise ValueError(f"{group!r} has {len(levels)} levels; pick a column with at most "
                         f"{MAX_GROUPS} groups")
    fitters = {}
    for level in levels:
        rows = frame[labels == level]
        fitters[level] = KaplanMeierFitter().fit(
            rows["time"], rows["event"], entry=rows["start"] if "start" in rows else None,
            label=str(level))
    return fitters


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


def at_risk_table(fitters: dict, ticks: list[float]) -> pd.DataFrame:
    """At risk, events and censored per group at each tick, as lifelines' add_at_risk_counts
    counts them: at risk just after the tick's removals, events and censored cumulative."""
    rows = []
    for level, kmf in fitters.items():
        et = kmf.event_table
        after = et.assign(at_risk=et["at_risk"] - et["removed"])
        for tick in ticks:
            upto = after.loc[:tick]
            if upto.empty:
                counts = (int(et["at_risk"].iloc[0]) if len(et) else 0, 0, 0)
            else:
                counts = (int(upto["at_risk"].iloc[-1]), int(upto["observed"].sum()),
                          int(upto["censored"].sum()))
            rows.append({"group": level, "time": tick, "at risk": counts[0],
                         "events": counts[1], "censored": counts[2]})
    return pd.DataFrame(rows)


def _left_border(plot, element) -> None:
    """The same left border on the curves and the at-risk table, so their time axes align."""
    plot.state.min_border_left = 150


def _steps(x: np.ndarray, *ys: np.ndarray):
    """Staircase (steps-post) coordinates for a band."""
    xs = np.repeat(x, 2)[1:]
    out = [np.repeat(y, 2)[:-1] for y in ys]
    return (xs, *out)


def km_plot(fitters: dict, window: tuple[float, float], time_label: str = "time",
            ci: bool = True) -> tuple[hv.Layout, pd.DataFrame]:
    """Kaplan-Meier curves with CI bands and censor ticks, over an aligned at-risk table.

    Returns the layout and the at-risk table (at ~6 time points within ``window``).
    """
    lo, hi = window
    pad = 0.03 * (hi - lo) if hi > lo else 1.0
    curves = []
    for k, (level, kmf) in enumerate(fitters.items()):
        color = PALETTE[k % len(PALETTE)]
        sf = kmf.survival_function_[str(level)]
        band = kmf.confidence_interval_
        if len(sf) > MAX_STEPS:  # thin a 200,000-step curve to what a screen can show
            keep = np.unique(np.linspace(0, len(sf) - 1, MAX_STEPS).astype(int))
            sf, band = sf.iloc[keep], band.iloc[keep]
        x, y = sf.index.to_numpy(float), sf.to_numpy(float)
        if ci:
            xs, lower, upper = _steps(x, band.iloc[:, 0].to_numpy(float),
                                      band.iloc[:, 1].to_numpy(float))
            curves.append(hv.Area((xs, lower, upper), time_label, ["lower", "upper"],
                                  label=str(level)).opts(color=color, alpha=0.15, line_alpha=0))
        curves.append(hv.Curve((x, y), time_label, "survival", label=str(level))
                      .opts(interpolation="steps-post", color=color, line_width=2))
        et = kmf.event_table
        censored_at = et.index[et["censored"] > 0].to_numpy(float)
        if len(censored_at) > MAX_TICKS:
            censored_at = censored_at[np.linspace(0, len(censored_at) - 1, MAX_TICKS).astype(int)]
        if len(censored_at):
            s_at = kmf.survival_function_at_times(censored_at).to_numpy(float)
            curves.append(hv.Scatter((censored_at, s_at), time_label, "survival",
                                     label=str(level))
                          .opts(marker="dash", angle=90, size=10, color=color, line_width=2,
                                show_legend=False))
    km = hv.Overlay(curves).opts(
        title="Kaplan-Meier (95% CI bands; ticks = censored)", ylim=(0, 1.02),
        ylabel="survival probability",
        xlim=(lo - pad, hi + pad), show_grid=True, width=PLOT_WIDTH, height=380,
        legend_position="bottom_left", hooks=[_left_border], toolbar="above")
    ticks = nice_ticks(lo, hi)
    risk = at_risk_table(fitters, ticks)
    labels, names = [], []
    for level in fitters:
        for what in ("at risk", "events", "censored"):
            names.append(f"{level}: {what}")
    for _, r in risk.iterrows():
        for what in ("at risk", "events", "censored"):
            labels.append((r["time"], f"{r['group']}: {what}", str(int(r[what]))))
    table_el = hv.Labels(labels, [time_label, "row"], "count").opts(
        width=PLOT_WIDTH, height=40 + 22 * len(names), xlim=(lo - pad, hi + pad),
        text_font_size="9pt",
        title="Number at risk / events / censored (cumulative)", hooks=[_left_border],
        yaxis="left", show_grid=False, toolbar=None, invert_yaxis=True, ylabel="",
        xlabel=time_label, text_color="black")
    layout = (km + table_el).cols(1).opts(shared_axes=True)
    return layout, risk


def at_risk_display(risk: pd.DataFrame) -> pd.DataFrame:
    """The at-risk table as printed under a KM plot: one row per group and count, times across."""
    if risk.empty:
        return risk
    long = risk.melt(id_vars=["group", "time"], value_vars=["at risk", "events", "censored"],
                     var_name="count")
    wide = long.pivot_table(index=["group", "count"], columns="time", values="value",
                            sort=False).astype(int)
    wide.columns = [f"{t:g}" for t in wide.columns]
    return wide.reset_index()


# ----------------------------------------------------------------------------------------
# cumulative incidence (competing risks)
def cif_curves(store: Store, group: str | None, cause: int) -> pd.DataFrame:
    """engine.cumulative_incidence (Aalen-Johansen) of ``cause`` per group."""
    if store.start:
        raise ValueError("cumulative incidence needs one row per subject, not (start, stop] "
                         "episodes")
    codes = pd.to_numeric(store.column(store.event), errors="coerce")
    if codes.isna().any():
        raise ValueError(f"the event column {store.event!r} must hold numeric codes "
                         "(0 censored, 1..k causes)")
    frame = pd.DataFrame({"time": pd.to_numeric(store.column(store.time), errors="coerce"),
                          "event": codes.astype(int).to_numpy(),
                          "group": km_groups(store, group).to_numpy()})
    return engine.cumulative_incidence(frame, cause=int(cause), by="group", time="time",
                                       event="event")


def cif_plot(curves: pd.DataFrame, cause: int, window: tuple[float, float],
             time_label: str = "time") -> hv.Overlay:
    lo, hi = window
    pad = 0.03 * (hi - lo) if hi > lo else 1.0
    parts = []
    for k, (level, g) in enumerate(curves.groupby("group", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        x = g["time"].to_numpy(float)
        band = g[["lower", "upper"]].ffill().fillna(0.0)
        xs, lower, upper = _steps(x, band["lower"].to_numpy(float), band["upper"].to_numpy(float))
        parts.append(hv.Area((xs, lower, upper), time_label, ["lower", "upper"], label=str(level))
                     .opts(color=color, alpha=0.15, line_alpha=0))
        parts.append(hv.Curve((x, g["cif"].to_numpy(float)), time_label, "cumulative incidence",
                              label=str(level))
                     .opts(interpolation="steps-post", color=color, line_width=2))
    return hv.Overlay(parts).opts(
        title=f"Cumulative incidence of cause {cause} (Aalen-Johansen, 95% CI)",
        ylim=(0, 1.02), xlim=(lo - pad, hi + pad), width=PLOT_WIDTH, height=340,
        show_grid=True, legend_position="top_left", ylabel="cumulative incidence",
        toolbar="above", hooks=[_left_border])


# ----------------------------------------------------------------------------------------
# cross-validation of the penalty
def cv_plot(curve: pd.DataFrame, chosen: float, penalty: str) -> hv.Overlay:
    """The CV score (mean +/- sd over folds) against lambda on a log axis; the chosen lambda
    marked by a dashed line."""
    lam, mean, sd = (curve[c].to_numpy(float) for c in ("lambda", "mean", "sd"))
    score = "CV partial log-likelihood"
    band = hv.Spread((lam, mean, sd), "lambda", [score, "sd"], label="mean ± sd over folds") \
        .opts(color=PALETTE[0], alpha=0.2, line_alpha=0)
    line = hv.Curve((lam, mean), "lambda", score, label="mean").opts(color=PALETTE[0],
                                                                     line_width=2)
    points = hv.Scatter((lam, mean), "lambda", score).opts(color=PALETTE[0], size=7)
    mark = hv.VLine(chosen).opts(color=PALETTE[1], line_dash="dashed", line_width=2)
    return (band * line * points * mark).opts(
        title=f"Cross-validated {penalty} strength (dashed: chosen lambda = {chosen:.4g})",
        logx=True, padding=0.05, width=PLOT_WIDTH, height=340, show_grid=True,
        legend_position="bottom_left",
        toolbar="above", hooks=[_left_border])


def cv_table(curve: pd.DataFrame, chosen: float) -> pd.DataFrame:
    table_ = curve[["lambda", "mean", "sd"]].copy()
    table_["chosen"] = np.where(table_["lambda"] == chosen, "◀ chosen", "")
    return table_


# ----------------------------------------------------------------------------------------
# hazard ratios
def hr_table(summary: pd.DataFrame) -> pd.DataFrame:
    cols = ["coef", "hr", "hr_lower", "hr_upper", "se", "p", "penalized"]
    return summary[cols].reset_index()


def forest_plot(summary: pd.DataFrame, title: str = "Hazard ratios (95% CI)") -> hv.Overlay:
    """HR with CI segments on a log axis and a line at HR = 1."""
    df = summary.reset_index()
    df = df[np.isfinite(df["hr"]) & (df["hr"] > 0)].reset_index(drop=True)
    n = len(df)
    ys = np.arange(n)[::-1].astype(float)
    finite_ci = np.isfinite(df["hr_lower"]) & np.isfinite(df["hr_upper"]) & (df["hr_lower"] > 0)
    seg = df[finite_ci]
    segments = hv.Segments((seg["hr_lower"], ys[finite_ci.to_numpy()], seg["hr_upper"],
                            ys[finite_ci.to_numpy()]),
                           ["hazard ratio", "y", "x1", "y1"]).opts(color="#1f77b4", line_width=2)
    colors = np.where(df["penalized"].astype(bool), "#ff7f0e", "#1f77b4")  # orange: penalised
    points = hv.Scatter((df["hr"], ys, colors, df["covariate"]), "hazard ratio",
                        ["y", "color", "covariate"]).opts(size=9, color="color", marker="square",
                                                          tools=["hover"])
    ref = hv.VLine(1.0).opts(color="black", line_dash="dashed")
    values = np.concatenate([df["hr"], seg["hr_lower"], seg["hr_upper"]]) if n else np.array([1])
    lo, hi = min(values.min(), 1.0), max(values.max(), 1.0)
    return (segments * points * ref).opts(
        title=title, logx=True, width=PLOT_WIDTH, height=max(160, 40 + 28 * n),
        yticks=[(y, name) for y, name in zip(ys, df["covariate"])], ylim=(-0.7, n - 0.3),
        xlim=(lo / 1.3, hi * 1.3), show_grid=True, ylabel="", hooks=[_left_border],
        toolbar="above")


class ResultsView(Viewer):
    """Sections: Kaplan-Meier, hazard ratios, comparison of kept fits."""

    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.store
        self.group = pn.widgets.Select(label="Curves by", width=240)
        self.window = pn.widgets.RangeSlider(label="Time window (zoom)", start=0, end=1,
                                             value=(0, 1), step=0.1, width=420)
        self.early = pn.widgets.Button(label="First 30 time units", width=170)
        self.early.on_click(self._early)
        self.full = pn.widgets.Button(label="Whole follow-up", width=150)
        self.full.on_click(self._full)
        self.ci = pn.widgets.Checkbox(label="CI bands", value=True)
        self.km = pn.pane.HoloViews(linked_axes=False)
        self.risk = table()
        self.km_message = pn.pane.Markdown()
        self.cif_cause = pn.widgets.Select(label="Cause", width=160)
        self.cif = pn.pane.HoloViews()
        self.cif_message = pn.pane.Markdown()
        self.cif_section = pn.Column("### Cumulative incidence (competing risks)", self.cif_cause,
                                     self.cif_message, self.cif, visible=False)
        self.cif_cause.param.watch(self._draw_cif, "value")
        self.fit_select = pn.widgets.Select(label="Fit", width=240)
        self.fit_info = pn.pane.Markdown(sizing_mode="stretch_width")
        self.hr = table(pagination="local", page_size=12, css_classes=["hr-table"])
        self.forest = pn.pane.HoloViews(sizing_mode="fixed")
        self.compare = table(pagination="local", page_size=10)
        self.compare_hr = table(pagination="local", page_size=15, css_classes=["compare-hr-table"])
        self.cv_info = pn.pane.Markdown(css_classes=["cv-info"], sizing_mode="stretch_width")
        self.cv = pn.pane.HoloViews()
        self.cv_curve = table()
        self.cv_section = pn.Column("### Cross-validation of the penalty", self.cv_info,
                                    self.cv, self.cv_curve, visible=False)
        s.param.watch(self._draw_cv, ["cv"])
        self.group.param.watch(self._draw_km, "value")
        self.window.param.watch(self._draw_km, "value_throttled")
        self.ci.param.watch(self._draw_km, "value")
        self.fit_select.param.watch(self._draw_fit, "value")
        s.param.watch(self._on_data, ["data_version", "treatment", "time", "start", "event",
                                      "event_codes", "model"])
        s.param.watch(self._on_fits, ["fits"])
        self.risk_frame = pd.DataFrame()
        self._hold = False
        self._on_data()
        self._on_fits()

    # sections: (title, panel). Cumulative incidence and the CV curve slot in here.
    @property
    def sections(self) -> list[tuple[str | None, pn.viewable.Viewable]]:
        return [
            ("Kaplan-Meier", pn.Column(
                pn.Row(self.group, self.ci), pn.Row(self.window, self.early, self.full),
                self.km_message, self.km, "#### At-risk table", self.risk)),
            (None, self.cif_section),  # titled inside: hidden without competing risks
            (None, self.cv_section),   # titled inside: hidden until a cross-validation ran
            ("Hazard ratios", pn.Column(self.fit_select, self.fit_info, self.hr, self.forest)),
            ("Comparison of kept fits", pn.Column(
                self.compare, "#### Hazard ratios side by side", self.compare_hr)),
        ]

    # ------------------------------------------------------------------------------------
    def _on_data(self, *events) -> None:
        s = self.store
        if not s.loaded or s.time is None or s.event is None:
            self.km.object = None
            return
        cols = [c for c in s.columns if c not in {s.time, s.start, s.event, s.id, s.weights}]
        if s.simulated is not None:
            cols = cols[:60]
        options = [NO_GROUP] + cols
        self.group.options = options
        default = s.treatment if s.treatment in options else NO_GROUP
        try:
            times = pd.to_numeric(s.column(s.time), errors="coerce")
            lo = float(np.nanmin(pd.to_numeric(s.column(s.start), errors="coerce"))) \
                if s.start else 0.0
            hi = float(np.nanmax(times))
        except Exception:
            lo, hi = 0.0, 1.0
        lo = min(lo, 0.0)
        if not (math.isfinite(hi) and hi > lo):
            hi = lo + 1.0
        self.window.param.update(start=lo, end=hi, step=max((hi - lo) / 200, 1e-9))
        self._set_window(lo, hi, draw=False)
        if self.group.value == default:
            self._draw_km()
        else:
            self.group.value = default

    def _early(self, event=None) -> None:
        lo = self.window.start
        hi = min(lo + 30.0, self.window.end)
        self._set_window(lo, hi)

    def _full(self, event=None) -> None:
        self._set_window(self.window.start, self.window.end)

    def _set_window(self, lo: float, hi: float, draw: bool = True) -> None:
        """Move the zoom slider from code (a drag sets value_throttled itself, which redraws)."""
        self._hold = not draw
        try:
            self.window.value = (lo, hi)
            with param.edit_constant(self.window):
                self.window.value_throttled = (lo, hi)
        finally:
            self._hold = False

    def _draw_km(self, *events) -> None:
        s = self.store
        if self._hold or not s.loaded or s.time is None or s.event is None:
            return
        try:
            fitters = fit_km(s, self.group.value)
            lo, hi = self.window.value
            layout, risk = km_plot(fitters, (lo, hi), time_label=s.time, ci=self.ci.value)
        except Exception as exc:  # bad roles: say so, keep the page
            self.km_message.object = f"Kaplan-Meier is not available: {exc}"
            self.km.object = None
            self.risk.value = pd.DataFrame()
            self.risk_frame = pd.DataFrame()
            return
        self.km_message.object = ""
        self._draw_cif()
        self.km.object = layout
        self.risk_frame = risk
        self.risk.value = at_risk_display(risk)

    def _draw_cif(self, *events) -> None:
        """Cumulative incidence when the event column has several causes (or Fine-Gray)."""
        s = self.store
        if self._hold or not s.loaded or s.event is None:
            return
        causes = s.cause_options() if s.simulated is None else []
        show = len(causes) >= 2 or (s.model == "fine_gray" and causes)
        self.cif_section.visible = bool(show)
        if not show:
            self.cif.object = None
            return
        self._hold = True
        try:
            self.cif_cause.options = {str(c): c for c in causes}
            if self.cif_cause.value not in causes:
                self.cif_cause.value = s.cause if s.cause in causes else causes[0]
        finally:
            self._hold = False
        try:
            curves = cif_curves(s, self.group.value, self.cif_cause.value)
            self.cif.object = cif_plot(curves, self.cif_cause.value, self.window.value, s.time)
            self.cif_message.object = ""
        except Exception as exc:
            self.cif.object = None
            self.cif_message.object = f"Cumulative incidence is not available: {exc}"

    def _draw_cv(self, *events) -> None:
        run = self.store.cv
        self.cv_section.visible = run is not None
        if run is None:
            self.cv.object = None
            return
        res = run.result
        self.cv_info.object = (
            f"**{run.name}**: {run.penalty}, chosen lambda = **{run.chosen:.4g}** "
            f"(lambda_max {res.lambda_max:.4g}; {len(res.curve)} grid points; the refit at the "
            "chosen lambda is kept as this fit).")
        self.cv.object = cv_plot(res.curve, run.chosen, run.penalty)
        df = cv_table(res.curve, run.chosen)
        self.cv_curve.formatters = number_formatters(df, 4)
        self.cv_curve.value = df

    def _on_fits(self, *events) -> None:
        s = self.store
        names = [f.name for f in s.fits]
        self.fit_select.options = names
        latest = names[-1] if names else None
        if self.fit_select.value == latest:
            self._draw_fit()
        else:
            self.fit_select.value = latest
        comp = s.comparison()
        self.compare.formatters = number_formatters(comp, 4)
        self.compare.value = comp
        side = s.coefficient_comparison().reset_index() if s.fits else pd.DataFrame()
        self.compare_hr.formatters = number_formatters(side, 4)
        self.compare_hr.value = side

    def _draw_fit(self, *events) -> None:
        fit = self.store.get_fit(self.fit_select.value)
        if fit is None:
            self.fit_info.object = "No fit yet: press **Fit** in the Fit tab."
            self.hr.value = pd.DataFrame()
            self.forest.object = None
            return
        res = fit.result
        self.fit_info.object = (
            f"**{fit.name}** — {fit.spec['data']['label']}; n = {res.n:,}, events = "
            f"{res.n_events:,}, strata = {fit.n_strata}, ties = "
            f"{res.spec['ties']}, penalty = {res.spec['penalty']}; "
            f"{'converged' if res.converged else 'NOT converged'} in {res.n_iter} iterations. "
            "Penalised coefficients have no standard error (shown as NaN).")
        df = hr_table(fit.summary)
        self.hr.formatters = number_formatters(df, 6)
        self.hr.value = df
        try:
            self.forest.object = forest_plot(fit.summary.head(60))
        except Exception as exc:
            notify("warning", f"forest plot not drawn: {exc}")
            self.forest.object = None

    def __panel__(self):
        parts = ["## Results"]
        for title, body in self.sections:
            parts += [f"### {title}", body] if title else [body]
        return pn.Column(*parts, sizing_mode="stretch_width")
