"""The OMOP study tab and the cross-validation action without a browser: store jobs, view
logic, plots, and bad settings as messages."""

from __future__ import annotations

import asyncio

import holoviews as hv
import pandas as pd
import pytest
from bokeh.models import LogScale, Span

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402
from app.data.loading import DataLoadError, concept_names, open_omop  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.omop import plots as omop_plots  # noqa: E402
from app.omop.jobs import STUDY_FIT_NAME  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.shell import plots  # noqa: E402
from app.survival import results  # noqa: E402
from app.survival.jobs import comparison  # noqa: E402
from app.survival.state import Workbench  # noqa: E402
from eunomia_study import CELECOXIB, DICLOFENAC, GI_BLEED, default_study  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


@pytest.fixture(scope="module")
def study():
    """engine.cdm.run_study with the tab's defaults, as the engine gives it."""
    return default_study()


def test_study_defaults_are_the_teaching_study():
    s = OmopState(workbench=Workbench(store=Store())).settings()
    assert s == {"database": "Eunomia GiBleed", "target": CELECOXIB, "comparator": DICLOFENAC,
                 "outcome": GI_BLEED, "prior_observation": 183, "risk_window_end": 30,
                 "ps_strata": 5, "match_ratio": 1, "caliper": 0.2,
                 "restrict_to_common_period": False, "censor_at_new_risk_window": False}


def test_concept_names_from_the_vocabulary():
    con = open_omop("")
    try:
        names = concept_names(con, [CELECOXIB, DICLOFENAC, GI_BLEED, 42])
    finally:
        con.close()
    assert names == {CELECOXIB: "celecoxib", DICLOFENAC: "Diclofenac",
                     GI_BLEED: "Gastrointestinal hemorrhage"}


def test_bad_study_settings_are_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(tmp_path))
    s = OmopState(workbench=Workbench(store=Store()))
    s.comparator = CELECOXIB
    with pytest.raises(DataLoadError, match="must be different"):
        s.job()
    s.comparator = DICLOFENAC
    s.path = str(tmp_path / "nothing.duckdb")
    with pytest.raises(DataLoadError, match="no DuckDB file"):
        s.job()
    with pytest.raises(DataLoadError, match="lacks table"):
        open_omop(str(tmp_path))  # an empty folder: no CDM tables


@pytest.mark.slow  # two OMOP studies on Eunomia: about 35 s
def test_study_view_matches_the_engine_and_keeps_the_stratified_fit(app, study):
    app.tabs.active = main.TABS.index("OMOP study")
    asyncio.run(app.omop.run_study())
    assert app.omop.runner.last_outcome == "done", app.omop.status.object
    shown = app.omop.hr.value.set_index("analysis")
    expected = study.hazard_ratios.set_index("analysis")
    pd.testing.assert_series_equal(shown["hr"], expected["hr"])
    assert shown.loc["PS stratified (5 strata)", "HR (95% CI)"].startswith("0.982 (")
    assert "PS weighted (ATO)" in shown.index       # overlap weights, robust SE
    assert app.omop.km_weighted.visible                 # and that population's curves
    assert "PS weighted, ATO" in hv.render(app.omop.km_weighted.object).title.text
    pd.testing.assert_frame_equal(app.omop.attrition.value, study.attrition)
    pd.testing.assert_frame_equal(app.omop.counts.value, study.counts)   # with the rates
    assert "celecoxib (1118084)" in app.omop.names.object
    kept = app.workbench.get_fit(STUDY_FIT_NAME)
    assert kept.name == STUDY_FIT_NAME and kept.n_strata == 5
    assert kept.summary.loc["treatment", "hr"] == pytest.approx(expected.loc[
        "PS stratified (5 strata)", "hr"], rel=1e-12)
    assert app.tabs.active == main.TABS.index("OMOP study")  # the study's kept fit stays put
    row = comparison(app.workbench.fits).set_index("fit").loc[STUDY_FIT_NAME]
    assert row["strata"] == 5 and row["treatment ratio"] == "treatment: HR 0.9824"
    # a rerun replaces the kept fit rather than adding a second one
    asyncio.run(app.omop.run_study())
    assert [f.name for f in app.workbench.fits] == [STUDY_FIT_NAME]


@pytest.mark.slow  # an OMOP study on Eunomia (the module fixture): about 8 s
def test_study_plots(study):
    pref = omop_plots.preference_plot(study.cohort[["treatment", "preference"]])
    assert [h.label for h in pref.Histogram] == ["target", "comparator"]
    bal = omop_plots.balance_plot(study.balance_stratified, study.balance_matched,
                             study.balance_weighted)
    assert len(bal.Scatter) == 3 and len(bal.VLine) == 1 and len(bal.HLine) == 1
    km = omop_plots.km_by_arm_plot(study.km, "KM")
    assert len(km.Curve) == 2 and len(km.Area) == 2
    weighted = omop_plots.km_by_arm_plot(study.km_weighted, "KM weighted")
    assert len(weighted.Curve) == 2 and len(weighted.Area) == 2
    for element in (pref, bal, km, weighted):
        hv.render(element)


def test_study_shows_its_step_and_cancel_keeps_the_page(app, monkeypatch):
    from app.omop.jobs import StudyJob

    real = StudyJob.run

    def held_at_step_2(self, cancel=None, progress=None):
        """The study, waiting at its second step until Cancel (the page polls every 0.25 s:
        a quick step could pass unseen)."""
        def report(k, n, step):
            progress(k, n, step)
            if k == 1:
                cancel.wait(60)
        return real(self, cancel, report)

    monkeypatch.setattr(StudyJob, "run", held_at_step_2)

    async def run_and_cancel():
        task = asyncio.ensure_future(app.omop.run_study())
        while "step 2 of 5" not in app.omop.status.object:      # the baseline covariates
            assert not task.done(), app.omop.status.object
            await asyncio.sleep(0.01)
        assert "Running the study on Eunomia GiBleed … baseline covariates (step 2 of 5)" in \
            app.omop.status.object
        app.omop.runner.cancel()
        await task

    asyncio.run(run_and_cancel())
    assert app.omop.runner.last_outcome == "cancelled", app.omop.status.object
    assert app.omop.status.object.startswith("Study cancelled at ")
    assert app.omop_state.study is None and app.workbench.fits == []
    assert not app.omop.run_button.disabled and app.omop.runner.cancel_button.disabled


def test_failed_study_is_a_message(app, monkeypatch):
    def broken(self, cancel=None, progress=None):
        raise ValueError("the cohort has persons in only one arm")

    monkeypatch.setattr("app.omop.jobs.StudyJob.run", broken)
    asyncio.run(app.omop.run_study())
    assert app.omop.runner.last_outcome == "failed"
    assert app.omop.status.object == "Study failed: the cohort has persons in only one arm"
    assert not app.omop.run_button.disabled and not app.omop.results.visible
    assert app.workbench.fits == []


# ------------------------------------------------------------------------------------------
# cross-validation of the penalty
def test_cv_job_needs_a_penalty_and_no_cut_points():
    s = Store()
    s.load_sample("rossi")
    with pytest.raises(DataLoadError, match="L1 or L2"):
        Workbench(store=s).cv_job()
    s.penalty = "L1"
    s.cut_points = {"fin": [10.0]}
    with pytest.raises(DataLoadError, match="cut points"):
        Workbench(store=s).cv_job()


def test_cv_job_equals_engine_cross_validate(rossi):
    s = Store()
    s.load_sample("rossi")
    s.param.update(penalty="L1", unpenalized=["fin"])
    run, kept = Workbench(store=s, cv_folds=3, cv_grid=4).cv_job("cv").run()
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                      covariates=list(s.covariates))
    direct = engine.cross_validate(cohort, penalty="l1", folds=3, grid=4, seed=0,
                                   ties="efron", unpenalized=["fin"])
    pd.testing.assert_frame_equal(run.result.curve, direct.curve)
    assert run.chosen == direct.penalty.lam
    assert kept.spec["options"]["strength"] == run.chosen
    assert kept.summary.loc["fin", "penalized"] == False  # noqa: E712


def test_cv_in_the_fit_view_draws_the_curve_and_keeps_the_refit(app):
    app.store.penalty = "L2"
    app.workbench.param.update(cv_folds=3, cv_grid=4)
    asyncio.run(app.fit.run_cv())
    assert app.fit.runner.last_outcome == "done", app.fit.status.object
    run = app.workbench.cv
    assert app.workbench.fits[-1].name == run.name == "fit 1 (CV L2)"
    assert app.results.cv_section.visible
    assert f"chosen lambda = **{run.chosen:.4g}**" in app.results.cv_info.object
    table = app.results.cv_curve.value
    assert len(table) == 4 and (table["chosen"] != "").sum() == 1
    assert chosen_mark(app.results.cv.object) == run.chosen
    assert app.tabs.active == main.TABS.index("Results")


def test_cv_cancel_and_failure_are_messages(app, monkeypatch):
    def cancelled(self, cancel=None, progress=None):
        progress(1, 3)
        raise engine.Cancelled("cancelled")

    app.store.penalty = "L1"
    monkeypatch.setattr("app.survival.jobs.CrossValidationJob.run", cancelled)
    asyncio.run(app.fit.run_cv())
    assert app.fit.runner.last_outcome == "cancelled" and app.workbench.fits == []
    app.store.penalty = "none"
    asyncio.run(app.fit.run_cv())
    assert app.fit.runner.last_outcome == "failed"
    assert "L1 or L2" in app.fit.status.object
    assert not app.fit.cv_button.disabled and not app.fit.fit_button.disabled


def chosen_mark(plot) -> float:
    """Where the CV plot's one dashed vertical line stands."""
    (span,) = [m for m in plot.center if isinstance(m, Span) and m.dimension == "height"]
    return span.location


def test_cv_plot_marks_the_chosen_lambda():
    curve = pd.DataFrame({"lambda": [10.0, 1.0, 0.1], "mean": [-5.0, -4.0, -4.5],
                          "sd": [0.5, 0.4, 0.6]})
    plot = plots.cv_plot(curve, 1.0, "L1")
    assert chosen_mark(plot) == 1.0 and isinstance(plot.x_scale, LogScale)
    assert plot.renderers[1].data_source.data["lambda"].tolist() == [10.0, 1.0, 0.1]
    assert results.cv_table(curve, 1.0)["chosen"].tolist() == ["", "◀ chosen", ""]


def test_opening_the_tab_looks_up_the_concept_names(app):
    assert "celecoxib" not in app.omop.names.object
    asyncio.run(app.omop.on_show())
    assert app.omop.names.object.startswith("**target** celecoxib (1118084)")
    app.omop_state.outcome = 42
    asyncio.run(app.omop.lookup_names())
    assert "(not in the concept table) (42)" in app.omop.names.object
