"""The SCCS page without a browser: the state's parsing of windows and cut points, the job's
IRRs against engine.fit on the same SccsData (and statsmodels' ConditionalPoisson), the
exported script run outside the app, cancelling, and bad input kept as a message."""

from __future__ import annotations

import asyncio
import json
import threading

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402, F401  (loads the bokeh plotting extension)
from app.data.loading import DataLoadError  # noqa: E402
from app.sccs.jobs import make_sccs  # noqa: E402
from app.sccs.script import python_script  # noqa: E402
from app.sccs.state import SccsState, parse_age_cuts, parse_windows  # noqa: E402
from app.shell import job_runner  # noqa: E402
from app.sccs import view as sccs_view  # noqa: E402
from app.sccs import sources as sccs_sources  # noqa: E402
from app.sccs.plots import irr_forest  # noqa: E402

AGE_CUTS = [427, 488, 549, 610, 671]  # R SCCS's itpdat example


def itp_direct(**extra):
    return engine.SccsData.from_cases(
        engine.datasets.load_sccs("itpdat"), case="case", obs_start="sta", obs_end="end",
        event_times="itp", exposure_start=["mmr"], risk_windows={"mmr": [(0, 42)]},
        age_cuts=AGE_CUTS, **extra)


@pytest.fixture
def notes(monkeypatch):
    """The notifications the page raised, as (kind, message)."""
    seen = []
    for module in (sccs_view, sccs_sources, job_runner):
        monkeypatch.setattr(module, "notify", lambda kind, message, duration=0:
                            seen.append((kind, message)))
    return seen


@pytest.fixture
def view(notes):
    import panel as pn

    yield sccs_view.SccsView()
    pn.state.reset()


def run_script(text: str) -> dict:
    """Run an exported script as a user would (its own namespace); return its globals."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(text, "sccs_analysis.py", "exec"), namespace)  # noqa: S102
    return namespace


# -- parsing ---------------------------------------------------------------------------------
def test_windows_and_age_cuts_parse_to_engine_arguments():
    assert parse_windows("0..42", ["mmr"]) == {"mmr": [(0, 42)]}
    assert parse_windows("0..42, 43..end+7", ["a", "b"]) == {
        "a": [(0, 42), (43, "end+7")], "b": [(0, 42), (43, "end+7")]}
    assert parse_windows("mmr: -14..-1, 0..42; ns: 0..end", ["mmr", "ns"]) == {
        "mmr": [(-14, -1), (0, 42)], "ns": [(0, "end")]}
    assert parse_age_cuts(" 427, 488;549 ") == [427, 488, 549]
    for bad, words in (("0-42", "start..end"), ("0..soon", "not an offset"),
                       ("hib: 0..42", "not an exposure column")):
        with pytest.raises(DataLoadError, match=words):
            parse_windows(bad, ["mmr"])
    with pytest.raises(DataLoadError, match="must increase"):
        parse_age_cuts("488, 427")
    with pytest.raises(DataLoadError, match="whole number"):
        parse_age_cuts("427.5")


def test_design_errors_name_the_field_and_the_fix():
    s = SccsState()
    with pytest.raises(DataLoadError, match="no data yet"):
        s.spec()
    s.load_sample("gidat")
    s.exposure_ends = []                              # ns has no end column now
    s.windows = ""
    with pytest.raises(DataLoadError, match=r"'ns' has no risk window and no end column"):
        s.spec()
    s.exposure_ends = ["endns", "sta"]
    with pytest.raises(DataLoadError, match="one end per exposure"):
        s.spec()
    s.exposure_ends, s.pre_window = ["endns"], "0..14"
    with pytest.raises(DataLoadError, match="before the exposure start"):
        s.spec()


# -- the fit against the engine, statsmodels and the exported script -------------------------
def test_itpdat_fit_equals_engine_and_statsmodels_and_the_script_reproduces_it():
    from statsmodels.discrete.conditional_models import ConditionalPoisson

    s = SccsState()
    s.load_sample("itpdat")
    run = s.job().run()
    direct = engine.fit(itp_direct(), model="sccs")
    table = run.irr_table().set_index("covariate")
    pd.testing.assert_series_equal(table["irr"], direct.summary["irr"], rtol=1e-12)
    assert list(table.index) == ["mmr[0,42]", *[f"age[{a},{b})" for a, b in zip(
        AGE_CUTS, [*AGE_CUTS[1:], "inf"])]]
    f = run.sccs.to_frame()
    ref = ConditionalPoisson(f["events"], f[run.sccs.names], groups=f["case"],
                             offset=np.log(f["length"])).fit(method="newton", tol=1e-14,
                                                             maxiter=100, disp=0)
    np.testing.assert_allclose(table["coef"], ref.params, rtol=1e-6)

    spec = json.loads(json.dumps(s.spec()))           # the exported JSON spec
    assert spec["design"]["risk_windows"] == {"mmr": [[0, 42]]}
    script = run_script(python_script(spec))
    np.testing.assert_allclose(script["res"].summary["irr"], table["irr"], rtol=1e-12)
    pd.testing.assert_frame_equal(script["time_to_event"], run.time_to_event)


def test_end_of_observation_probe_against_a_day_by_day_expansion():
    """The probe model of case histories: exposure 1 on a case's last 30 observed days; its
    fit equals statsmodels' ConditionalPoisson on one row per observed day."""
    from sccs_oracles import day_by_day
    from statsmodels.discrete.conditional_models import ConditionalPoisson

    s = SccsState()
    s.load_sample("itpdat")
    assert s.probe_days == 30
    run = s.job().run()
    df = engine.datasets.load_sccs("itpdat")
    daily = day_by_day(df, "case", "sta", "end", "itp",
                       {"mmr[0,42]": ("mmr", None, 0, 42),
                        "end_of_observation[-29,0]": ("end", None, -29, 0)}, AGE_CUTS)
    names = run.diagnostic.coef.index
    assert daily.groupby("case")["end_of_observation[-29,0]"].sum().eq(30).all()
    ref = ConditionalPoisson(daily["events"], daily[names], groups=daily["case"]).fit(
        method="newton", maxiter=100, tol=1e-14, disp=0)
    np.testing.assert_allclose(run.diagnostic.coef, ref.params, rtol=1e-6)
    pre = run.pre_exposure()
    assert pre["covariate"].tolist() == ["mmr[0,42]", "end_of_observation[-29,0]"]
    script = run_script(python_script(s.spec()))
    np.testing.assert_allclose(script["diagnostic"].coef, run.diagnostic.coef, rtol=1e-12)


def test_penalised_multi_drug_fit_with_cv_bootstrap_and_its_script():
    s = SccsState()
    s.use_simulated(400, 12, 3)
    s.param.update(penalty="L1", strength=0.0, cv_folds=3, bootstrap=4, seed=2,
                   interest="drug0")
    run = s.job().run()
    sccs = engine.simulate_sccs(400, 12, seed=3)
    cv = engine.cross_validate(sccs, model="sccs", penalty="l1", folds=3, seed=2,
                               unpenalized=["drug0"])
    boot = engine.bootstrap(sccs, model="sccs", penalty=cv.penalty, replicates=4, seed=2,
                            unpenalized=["drug0"])
    assert float(run.cv.penalty.lam) == pytest.approx(float(cv.penalty.lam), rel=1e-12)
    table = run.irr_table().set_index("covariate")
    np.testing.assert_allclose(table["coef"], cv.fit.coef, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(table["selected"], boot.summary["nonzero_fraction"])
    assert not table.loc["drug0", "penalized"] and table["penalized"].drop("drug0").all()
    script = run_script(python_script(s.spec()))
    np.testing.assert_allclose(script["res"].coef, cv.fit.coef, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(script["boot"].summary["nonzero_fraction"],
                                  boot.summary["nonzero_fraction"])
    forest = irr_forest(run.exposure_table())
    labels = forest.Labels.I.dimension_values("text")
    assert "selected 1.00" in list(labels)             # drug0, unpenalised, always kept


def test_eras_csv_upload_equals_the_case_histories_fit(tmp_path, monkeypatch):
    eras = itp_direct().to_frame()
    s = SccsState()
    s.load_upload("itp_eras.csv", eras.to_csv(index=False).encode(), "eras")
    s.cv_folds = 3
    with pytest.raises(DataLoadError, match="choose L1 or L2"):
        s.spec()
    s.cv_folds = 0
    assert (s.case, s.length, s.events) == ("case", "length", "events")
    assert s.covariates == ["mmr[0,42]", *eras.columns[4:]]
    run = s.job().run()
    np.testing.assert_allclose(run.fit.coef, engine.fit(itp_direct(), model="sccs").coef,
                               rtol=1e-10)
    assert make_sccs(s.spec(), s.frame).names == run.sccs.names
    eras.to_csv(tmp_path / "itp_eras.csv", index=False)   # the script reads the upload
    monkeypatch.chdir(tmp_path)
    script = run_script(python_script(s.spec()))
    np.testing.assert_allclose(script["res"].coef, run.fit.coef, rtol=1e-12)


def test_eunomia_study_equals_engine_cdm_and_its_script():
    s = SccsState()
    s.use_eunomia()
    s.cdm_pre_window = ""                                # no diverging diagnostic window
    run = s.job().run()
    con = engine.cdm.open_eunomia()
    try:
        study = engine.cdm.sccs_study(con, exposure=1124300, outcome=192671,
                                      risk_window=(0, 30), pre_window=None)
    finally:
        con.close()
    pd.testing.assert_frame_equal(run.study.irr, study.irr, rtol=1e-12)
    assert run.pre_exposure()["covariate"].tolist() == ["exposure[0,30]",
                                                        "end_of_observation[0,29]"]
    script = run_script(python_script(s.spec()))
    pd.testing.assert_frame_equal(script["study"].irr, study.irr, rtol=1e-12)


# -- the view: worker thread, cancel, bad input kept as a message -----------------------------
def test_view_fits_shows_results_and_keeps_them_after_bad_input(view, notes):
    view.state.load_sample("itpdat")
    assert view.roles["event_times"].value == "itp" and view.exposures.value == ["mmr"]
    asyncio.run(view.run_fit())
    assert view.runner.last_outcome == "done", view.status.object
    first = view.state.run
    shown = view.results.irr.value.set_index("covariate")
    assert shown.loc["mmr[0,42]", "irr"] == pytest.approx(3.226191, abs=5e-7)
    assert view.results.body.visible and view.results.forest.object is not None
    days = engine.sccs_time_to_event(engine.datasets.load_sccs("itpdat"), "case", "itp", "mmr")
    pd.testing.assert_frame_equal(first.days_to_event(), days)
    assert view.results.tte.object is not None and view.results.oe.object is None
    assert "engine.SccsData.from_cases(" in view.results.script.object

    view.windows.value = "0-42"                           # a typo: a message, nothing lost
    asyncio.run(view.run_fit())
    assert view.runner.last_outcome == "failed"
    assert notes[-1][0] == "error" and "start..end, e.g. 0..42" in notes[-1][1]
    assert view.state.run is first and view.state.frame is not None

    view.windows.value = "0..42"
    view.roles["event_times"].value = "sex"               # events outside observation
    asyncio.run(view.run_fit())
    assert view.runner.last_outcome == "failed" and "'sex'" in notes[-1][1]
    assert view.state.run is first
    csv = view.results.irr_csv()
    assert csv.splitlines()[1].startswith('"mmr[0,42]",3.22619')
    assert "<html" in view.results.plots_html().lower()


def test_uploads_case_histories_and_a_bad_file_is_a_message(view, notes):
    view.state.load_sample("itpdat")
    view.sources.file.value = {"empty.csv": ""}
    assert notes[-1][0] == "error" and "empty" in notes[-1][1]
    assert view.state.source["name"] == "itpdat"

    text = engine.datasets.load_sccs("gidat").to_csv(index=False)
    view.sources.file.value = {"gi.csv": text}                  # raw case histories (the default)
    assert notes[-1][0] == "success" and view.state.source["label"] == "file: gi.csv"
    assert [view.roles[r].value for r in ("case", "obs_start", "obs_end", "event_times")] == [
        "case", "sta", "end", ""]
    asyncio.run(view.run_fit())                         # no event day chosen yet
    assert view.runner.last_outcome == "failed" and "choose the event day column" in notes[-1][1]
    view.roles["event_times"].value = "bleed"
    view.exposures.value, view.exposure_ends.value = ["ns"], ["endns"]
    view.windows.value = "ns: 0..end"
    asyncio.run(view.run_fit())
    assert view.runner.last_outcome == "done", view.status.object
    direct = engine.fit(engine.SccsData.from_cases(
        engine.datasets.load_sccs("gidat"), case="case", obs_start="sta", obs_end="end",
        event_times="bleed", exposure_start=["ns"], exposure_end={"ns": "endns"},
        risk_windows={"ns": [(0, "end")]}), model="sccs")
    np.testing.assert_allclose(view.state.run.fit.coef, direct.coef, rtol=1e-12)
    assert "pd.read_csv('gi.csv')" in view.results.script.object


def test_cancel_stops_the_fit_and_the_bootstrap():
    s = SccsState()
    s.load_sample("itpdat")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(engine.Cancelled):
        s.job().run(cancel)
    s.use_simulated(300, 8, 1)
    s.param.update(bootstrap=50)
    later, stages = threading.Event(), []

    def progress(stage, done, total):
        stages.append((stage, done))
        if stage.startswith("bootstrap"):
            later.set()

    with pytest.raises(engine.Cancelled):
        s.job().run(later, progress)
    assert stages[-1][0] == "bootstrap replicates" and stages[-1][1] < 50
