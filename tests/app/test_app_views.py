"""View logic without a browser: Kaplan-Meier and at-risk counts, forest plot, timing, export,
and the views' handling of bad input."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")
pytest.importorskip("holoviews")

import holoviews as hv  # noqa: E402
from bokeh.models import LogScale, Scatter, Span  # noqa: E402

import engine  # noqa: E402
from app import main  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.shell import plots  # noqa: E402
from app.survival import results  # noqa: E402
from app.timing import plots as timing_plots  # noqa: E402
from app.timing import view as timing  # noqa: E402
from engine.regression import peers  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def test_at_risk_counts_match_direct_counts(rossi):
    s = Store()
    s.load_sample("rossi")
    km = results.km_result(s, "fin")
    ticks = plots.nice_ticks(0, 52)
    assert ticks == [0, 10, 20, 30, 40, 50]
    table = results.at_risk_table(km, ticks)
    assert len(table) == 2 * len(ticks)
    for _, row in table.iterrows():  # R's summary(survfit, times=): at risk at t, counts since
        arm = rossi[rossi["fin"] == int(row["group"].split("= ")[1])]
        t = row["time"]
        before = max([u for u in ticks if u < t], default=-1.0)
        since = (arm["week"] > before) & (arm["week"] <= t)
        assert row["at risk"] == (arm["week"] >= t).sum()
        assert row["events"] == (since & (arm["arrest"] == 1)).sum()
        assert row["censored"] == (since & (arm["arrest"] == 0)).sum()


def test_km_curve_is_the_engines_and_matches_lifelines(rossi):
    """The curve is lifelines'; its band R's default log limits (Greenwood's variance of log S,
    by hand), or lifelines' log-log band when the user picks log-log."""
    from lifelines import KaplanMeierFitter
    from scipy.stats import norm

    s = Store()
    s.load_sample("rossi")
    assert s.conf_type == "log"  # R's survfit default
    table = results.fit_km(s, "fin")
    s.conf_type = "log-log"
    loglog = results.fit_km(s, "fin")
    for level, g in table.groupby("group"):
        arm = rossi[rossi["fin"] == int(level.split("= ")[1])]
        kmf = KaplanMeierFitter().fit(arm["week"], arm["arrest"])
        times = g["time"].to_numpy()
        expected = kmf.survival_function_at_times(times).to_numpy()
        np.testing.assert_allclose(g["survival"].to_numpy(), expected, rtol=1e-12)
        events = kmf.event_table
        d, n = events["observed"], events["at_risk"]
        greenwood = (d / (n * (n - d))).cumsum().loc[times].to_numpy()
        np.testing.assert_allclose(g["lower"].to_numpy(),
                                   expected * np.exp(-norm.ppf(0.975) * np.sqrt(greenwood)),
                                   rtol=1e-9)
        band = kmf.confidence_interval_.loc[times]
        lower = loglog[loglog["group"] == level]["lower"].to_numpy()
        np.testing.assert_allclose(lower, band.iloc[:, 0], rtol=1e-9)


def test_km_plot_has_bands_ticks_and_aligned_table():
    s = Store()
    s.load_sample("stanford_heart")  # start/stop rows: lifelines' entry=
    km = results.km_result(s, "surgery")
    risk = results.at_risk_table(km, plots.nice_ticks(0, 400))
    layout = plots.km_plot(km.table, risk, (0, 400), time_label="stop")
    km, table = layout
    assert isinstance(table, hv.Labels)
    assert {type(e).__name__ for e in km} >= {"Curve", "Area", "Scatter"}
    assert set(risk["group"]) == {"surgery = 0", "surgery = 1"}
    assert risk["time"].max() <= 400
    for curve in km.Curve:
        survival = curve.dimension_values("survival")
        assert ((survival >= 0) & (survival <= 1)).all()
        assert (np.diff(survival) <= 1e-12).all()


def test_km_groups_cut_many_valued_numbers_in_quartiles():
    s = Store()
    s.load_sample("rossi")
    assert results.km_groups(s, "age").nunique() == 4
    assert results.km_groups(s, results.NO_GROUP).nunique() == 1


def test_large_curves_are_thinned():
    s = Store()
    s.load_simulated(30_000, 3, seed=1)
    km = results.km_result(s, "x0")
    layout = plots.km_plot(km.table, results.at_risk_table(km, [0, 1]), (0, 1))
    for curve in layout[0].Curve:
        assert len(curve) <= plots.MAX_STEPS


def test_forest_plot_log_axis_and_reference_line(app):
    asyncio.run(app.fit.run_fit())
    summary = app.workbench.fits[-1].summary
    plot = plots.forest_plot(summary)
    assert isinstance(plot.x_scale, LogScale)
    assert [(s.location, s.dimension) for s in plot.center if isinstance(s, Span)] == [
        (1.0, "height")]
    points = next(r for r in plot.renderers if isinstance(r.glyph, Scatter))
    assert list(points.data_source.data["covariate"]) == list(summary.index)
    np.testing.assert_allclose(points.data_source.data["hr"], summary["hr"])
    ticks = plot.yaxis[0].major_label_overrides
    assert sorted(ticks.values()) == sorted(summary.index)


def test_naive_loglik_matches_the_engine_scan():
    cohort = engine.simulate(400, 5, density=0.3, seed=4)
    beta = np.random.default_rng(0).normal(size=5) * 0.3
    naive = peers.naive_loglik(cohort.time, cohort.event, cohort.X, beta)
    assert naive == pytest.approx(engine.loglik(cohort, beta, ties="breslow"), rel=1e-10)


def test_timings_on_small_and_large_data():
    import threading

    s = Store()
    s.load_sample("rossi")
    df = timing.run_timings(s.subsample_factory(10_000), s.fit_options(), threading.Event(),
                            lambda m: None)
    by = df.set_index("method")
    assert by.loc["engine cpu / ccd", "seconds"] > 0
    assert by.loc["lifelines CoxPHFitter", "seconds"] > 0
    assert by.loc["naive O(N²): one log-likelihood (pure NumPy)", "seconds"] > 0
    s.load_simulated(30_000, 80, seed=0)
    df = timing.run_timings(s.subsample_factory(30_000), s.fit_options(), threading.Event(),
                            lambda m: None).set_index("method")
    assert df.loc["lifelines CoxPHFitter", "note"].startswith("skipped: too large")
    assert df.loc["naive O(N²): one log-likelihood (pure NumPy)", "note"].startswith("skipped")
    scaling = timing.run_scaling(lambda n: s.subsample_factory(n), 1_000, s.fit_options(),
                                 threading.Event(), lambda m: None)
    assert set(scaling["N"]) == {250, 500, 1000}
    hv.render(timing_plots.scaling_plot(scaling))
    hv.render(timing_plots.timing_bars(df.reset_index()))


def test_timing_view_runs(app):
    app.timing.scaling.value = False
    asyncio.run(app.timing.run())
    assert "Timed on sample: rossi" in app.timing.status.object
    assert len(app.timing.table.value) >= 6


def test_exports(app):
    assert "no fit yet" in app.export.hr_csv.callback().getvalue()  # a message, no exception
    asyncio.run(app.fit.run_fit())
    hr = pd.read_csv(app.export.hr_text())
    assert hr.loc[hr["covariate"] == "fin", "hr"].item() == pytest.approx(0.684257, abs=1e-6)
    assert json.loads(app.export.spec_text().getvalue())["roles"]["time"] == "week"
    assert "engine.fit(" in app.export.script_text().getvalue()
    assert app.export.km_text().getvalue().lstrip().lower().startswith("<!doctype html")
    assert "<html" in app.export.forest_text().getvalue()
    assert "fin" in app.export.comparison_text().getvalue()
    assert "at risk" in app.export.risk_text().getvalue()
    app.tabs.active = main.TABS.index("Export")   # the script is written when shown
    assert "```python" in app.export.script.object


def test_data_view_bad_upload_keeps_data(app):
    view = app.data
    view.file.value = {"broken.csv": b'week,arrest\n1,0\n2,1,5,6\n"x\n'}
    assert app.store.source["name"] == "rossi" and app.store.n_rows == 432
    view.file.value = {"empty.csv": b""}
    assert app.store.source["name"] == "rossi"
    view.file.value = {"ok.csv": "time,status,age\n5,1,40\n6,0,50\n7,1,60\n9,1,45\n"}
    assert app.store.source["label"] == "file: ok.csv"
    assert view.w["time"].value == "time" and view.w["event"].value == "status"
    assert view.w["covariates"].value == ["age"]
    assert "Ready to fit." in view.report.object


def test_data_view_role_widgets_write_the_store(app):
    view = app.data
    view.w["covariates"].value = ["fin", "age"]
    assert app.store.covariates == ["fin", "age"]
    view.w["start"].value = None
    view.w["time"].value = "fin"  # nonsense, but the report says so rather than failing
    assert "Not ready" in view.report.object or "Ready" in view.report.object
    view.w["time"].value = "week"
    assert "Ready to fit." in view.report.object


def test_design_view_cut_points(app):
    d = app.design
    d.cut_covariate.value = "fin"
    d.cut_times.value = "ten"
    d._add_cut()
    assert app.store.cut_points == {}
    d.cut_times.value = "10"
    d._add_cut()
    assert app.store.cut_points == {"fin": [10.0]}
    assert "`fin[10,inf)`" in d.cut_list.object
    assert app.store.model == "cox" and "cox" in list(d.model.options)
    assert "logistic" not in list(d.model.options)  # not a survival model


def test_fit_view_cancel(app):
    app.store.load_simulated(40_000, 60, seed=1)
    app.store.solver = "ccd"
    view = app.fit

    async def go():
        task = asyncio.ensure_future(view.run_fit())
        while not view.runner.running:
            await asyncio.sleep(0.01)
        view.runner.cancel()
        await task

    asyncio.run(go())
    assert view.runner.last_outcome == "cancelled", view.status.object
    assert "cancelled" in view.status.object
    assert app.workbench.fits == [] and not view.fit_button.disabled


def test_cumulative_incidence_section_for_competing_risks(app):
    app.data.sample.value = "bmtcrr"
    app.data._open_sample()
    app.tabs.active = main.TABS.index("Results")
    app.results.open_section(results.CURVES)
    section = app.results.cif_section
    assert section.visible and app.results.cif.object is not None, app.results.cif_message.object
    curves = results.cif_curves(app.store, "Source", 2)
    assert set(curves["group"]) == {"Source = BM+PB", "Source = PB"}
    assert curves.groupby("group")["cif"].apply(lambda c: (c.diff().dropna() >= -1e-12).all()).all()
    app.data.sample.value = "rossi"
    app.data._open_sample()
    assert not section.visible  # a single cause: no competing risks to show
