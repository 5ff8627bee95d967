"""How well a kept Cox fit predicts, shown inside Results: Uno's C, the time-dependent AUC and
the Brier score at chosen times with the integrated Brier score (engine.predictive_performance,
IPCW as scikit-survival), and a calibration table at the last time (engine.calibration_table:
predicted risk against the Kaplan-Meier risk by decile). Computed on request: on the fitted
cohort, so they describe apparent performance (held-out folds are the engine's)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store, parse_cut_points
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, show, table, while_filled


def default_times(res) -> str:
    """The quartiles of the fit's event times, as the box shows them."""
    cohort = res.problem.cohort
    t = np.asarray(cohort.time)[np.asarray(cohort.event) > 0]
    return ", ".join(f"{v:g}" for v in np.unique(np.quantile(t, [0.25, 0.5, 0.75])))


def why_not(fit) -> str:
    """Why the metrics cannot be computed for ``fit`` ('' when they can)."""
    if fit is None:
        return "No fit yet."
    res = fit.result
    if res.spec.get("model") != "cox":
        return "Prediction metrics are computed for Cox fits."
    if res.problem is None or res.problem.cohort.start is not None:
        return ("Prediction metrics need one row per subject from time 0 (this fit has "
                "(start, stop] rows).")
    return ""


class PredictionView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width")
        self.times = pn.widgets.TextInput(label="At times (comma-separated, increasing)",
                                          width=260)
        self.compute = pn.widgets.Button(label="Compute prediction metrics", width=230)
        self.compute.on_click(self._on_click)
        self.status = markdown(sizing_mode="stretch_width")
        # 10^6 people take 2 s: a worker thread, the server free meanwhile
        self.runner = JobRunner(self.status, [self.compute])
        self.summary = markdown(sizing_mode="stretch_width", css_classes=["prediction-summary"])
        self.by_time = table(css_classes=["prediction-table"])
        self.calibration = table(css_classes=["calibration-table"])
        # the tables join the page once computed (widgets.while_filled)
        self._by_time, self._calibration = while_filled(self.by_time), while_filled(
            self.calibration)
        self._fit = None
        self.computed: dict[str, pd.DataFrame] = {}   # file stem -> the table on screen

    def show_fit(self, fit) -> None:
        """The fit shown in Results: clear the last metrics, say whether they can be had."""
        self._fit, self.computed = fit, {}
        self.summary.object = self.status.object = ""
        self.by_time.value = self.calibration.value = pd.DataFrame()
        why = why_not(fit)
        self.compute.disabled = bool(why)
        if why:
            self.info.object = why
            return
        self.times.value = default_times(fit.result)
        self.info.object = ("Apparent performance on the fitted cohort: Uno's C (IPCW, up to "
                            "the last time), the cumulative/dynamic AUC and the Brier score at "
                            "each time, the integrated Brier score between the first and the "
                            "last, and a calibration table at the last time.")

    async def _on_click(self, event=None) -> None:
        await self.run()

    async def run(self) -> None:
        """The metrics of the shown fit at the box's times, by the page's job runner."""
        fit = self._fit
        if self.runner.running:
            return
        why = why_not(fit)
        if not why:
            try:
                times = parse_cut_points(self.times.value, "time")
            except ValueError as exc:                # DataLoadError names the bad time
                why = str(exc)
        if why:
            self.runner.refuse(f"Prediction metrics: {why}")
            return

        def work(cancel, progress):
            return (engine.predictive_performance(fit.result, times=times),
                    engine.calibration_table(fit.result, times[-1]))

        def done(result, progress) -> str:
            if self._fit is not fit:                 # another fit was shown meanwhile
                return "Metrics of an earlier fit: not shown."
            perf, calib = result
            s = perf.summary
            self.summary.object = (f"Uno's C (up to {s['tau']:g}) = **{s['uno_c']:.3f}**; "
                                   f"mean AUC = {s['mean_auc']:.3f}; integrated Brier score = "
                                   f"{s['integrated_brier']:.4f}")
            show(self.by_time, perf.by_time, 4)
            show(self.calibration, calib, 4)
            self.computed = {"prediction_summary": s.to_frame().T,
                             "prediction_by_time": perf.by_time, "calibration": calib}
            return f"Prediction metrics of **{fit.name}** in {progress.elapsed:.2f} s."

        await self.runner.run(work, lambda p: f"Computing the metrics … {p.elapsed:.1f} s",
                              notice="Prediction metrics", done=done,
                              cancelled=lambda p: "Cancelled.", thread="survscan-prediction")

    def files(self) -> dict[str, bytes]:
        """The report folder's prediction metrics and calibration table (CSV), once computed."""
        return {f"{name}.csv": frame.to_csv(index=False).encode()
                for name, frame in self.computed.items()}

    def __panel__(self):
        return pn.Column(self.info, pn.Row(self.times, self.compute),
                         pn.Row(self.runner.cancel_button, self.runner.progress), self.status,
                         self.summary,
                         self._by_time, "#### Calibration at the last time",
                         self._calibration, sizing_mode="stretch_width")
