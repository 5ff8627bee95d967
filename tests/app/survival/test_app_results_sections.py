"""The Results sections after the hazard ratios: adjusted curves by treatment
(app/survival/adjusted.py: the drawn curves and the difference at the chosen time are
engine.adjusted_curves' on the kept fit) and how well the fit predicts
(app/survival/prediction.py: engine.predictive_performance's and engine.calibration_table's
numbers, which tests/engine/prediction checks against scikit-survival); a fit without a
treatment covariate, of (start, stop] rows, or bad times, is a message, never a traceback."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.survival.adjusted import curve_times  # noqa: E402
from app.survival.results import ResultsView  # noqa: E402
from app.survival.state import Workbench  # noqa: E402


def test_adjusted_curves_are_the_engines(rossi_results):
    store, results = rossi_results
    view = results.adjusted
    assert store.treatment == "fin" and not view.draw.disabled
    view.at.value = 20.0
    asyncio.run(view.compute())
    assert view.runner.last_outcome == "done"
    res = results.workbench.fits[-1].result
    want = engine.adjusted_curves(res, "fin", times=np.unique(np.append(curve_times(res), 20.0)))
    shown = view.contrasts.value
    assert len(shown) == 1 and shown["time"].iloc[0] == 20.0
    expected = want.contrasts[want.contrasts["time"] == 20.0]
    cols = ["difference", "se", "lower", "upper", "ratio", "ratio_lower", "ratio_upper"]
    np.testing.assert_allclose(shown[cols].to_numpy(float), expected[cols].to_numpy(float),
                               rtol=1e-12)
    overlay = view.plot.object
    assert view.figure.visible and len(overlay.Curve) == 2 and len(overlay.Area) == 2
    import holoviews as hv

    curve = next(e for e in overlay if type(e) is hv.Curve)   # the first level's (not an Area)
    level0 = want.curves[want.curves["level"] == want.levels[0]]
    np.testing.assert_allclose(curve.dimension_values("survival"), level0["survival"].to_numpy())


def test_without_a_treatment_or_with_start_stop_rows_it_says_why(rossi_results):
    store, results = rossi_results
    store.treatment = None
    results.workbench.keep(results.workbench.fit_job().run())
    assert results.adjusted.draw.disabled and "Treatment" in results.adjusted.info.object
    heart = Store()
    bench = Workbench(store=heart)
    heart.load_sample("stanford_heart")
    view = ResultsView(store=heart, workbench=bench)
    heart.treatment = "transplant"
    if "transplant" not in heart.covariates:
        heart.covariates = [*heart.covariates, "transplant"]
    bench.keep(bench.fit_job().run())
    asyncio.run(view.adjusted.compute())       # the engine's CohortError, as a message
    assert view.adjusted.runner.last_outcome == "failed" and "entry times" in \
        view.adjusted.status.object
    assert not view.adjusted.figure.visible and view.adjusted.contrasts.value.empty


def test_metrics_on_the_page_are_the_engines(rossi_results):
    store, view = rossi_results
    p = view.prediction
    assert not p.compute.disabled
    res = view.workbench.fits[-1].result
    event_times = np.asarray(res.problem.cohort.time)[np.asarray(res.problem.cohort.event) > 0]
    assert p.times.value == ", ".join(
        f"{v:g}" for v in np.unique(np.quantile(event_times, [0.25, 0.5, 0.75])))
    p.times.value = "10, 30, 50"
    asyncio.run(p.run())
    want = engine.predictive_performance(res, times=[10.0, 30.0, 50.0])
    pd.testing.assert_frame_equal(p.by_time.value, want.by_time)
    assert f"Uno's C (up to 50) = **{want.summary['uno_c']:.3f}**" in p.summary.object
    pd.testing.assert_frame_equal(p.calibration.value, engine.calibration_table(res, 50.0))


def test_bad_times_and_start_stop_fits_are_messages(rossi_results):
    store, view = rossi_results
    p = view.prediction
    p.times.value = "10, soon"
    asyncio.run(p.run())                           # a message, the page unchanged
    assert p.runner.last_outcome == "failed" and "soon" in p.status.object
    assert p.by_time.value.empty and p.summary.object == ""
    heart = Store()
    bench = Workbench(store=heart)
    heart.load_sample("stanford_heart")
    other = ResultsView(store=heart, workbench=bench)
    bench.keep(bench.fit_job().run())
    assert other.prediction.compute.disabled
    assert "(start, stop] rows" in other.prediction.info.object


def test_drawn_sections_go_into_the_report_folder(rossi_results):
    """Adjusted curves and prediction metrics are in the report once drawn: their CSVs are the
    engine's tables and their figures are real PNG/SVG; before, the report has none."""
    import io

    store, results = rossi_results
    assert results.adjusted.files() == {} and results.prediction.files() == {}
    results.adjusted.at.value = 20.0
    asyncio.run(results.adjusted.compute())
    results.prediction.times.value = "10, 30, 50"
    asyncio.run(results.prediction.run())
    files = {**results.adjusted.files(), **results.prediction.files()}
    res = results.workbench.fits[-1].result
    want = engine.adjusted_curves(res, "fin", times=np.unique(np.append(curve_times(res), 20.0)))
    pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(files["adjusted_curves.csv"])),
                                  want.curves.reset_index(drop=True), check_dtype=False,
                                  rtol=1e-10)
    assert files["adjusted_curves.png"].startswith(b"\x89PNG")
    assert b"<svg" in files["adjusted_curves.svg"] and b"Adjusted survival by fin" in \
        files["adjusted_curves.svg"]
    perf = engine.predictive_performance(res, times=[10.0, 30.0, 50.0])
    by_time = pd.read_csv(io.BytesIO(files["prediction_by_time.csv"]))
    np.testing.assert_allclose(by_time.to_numpy(float), perf.by_time.to_numpy(float), rtol=1e-10)
    summary = pd.read_csv(io.BytesIO(files["prediction_summary.csv"]))
    assert summary["uno_c"].iloc[0] == pytest.approx(perf.summary["uno_c"], rel=1e-12)
    results.workbench.keep(results.workbench.fit_job().run())  # another fit: new sections
    assert results.adjusted.files() == {} and results.prediction.files() == {}


def test_the_global_tests_and_concordance_come_from_the_worker(monkeypatch):
    """A new fit's tests are computed by its job's worker thread, not when Results draws it
    (10^6 rows: 1.2 s that held every session's event loop)."""
    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    results = ResultsView(store=store, workbench=bench)
    kept = bench.fit_job().run()
    want = engine.concordance(kept.result)["concordance"]

    def refused(*args, **kwargs):
        raise AssertionError("computed while drawing")

    monkeypatch.setattr(engine, "concordance", refused)
    monkeypatch.setattr(engine, "global_tests", refused)
    bench.keep(kept)
    text = results.fit_tests.object
    assert f"Concordance (Harrell's C) = {want:.3f}" in text and "Wald test = " in text
