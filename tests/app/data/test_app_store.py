"""The app's data store without a browser: loading, roles, validation, fit jobs, spec, script."""

from __future__ import annotations

import contextlib
import io
import json
import math
import threading

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("param")

import engine  # noqa: E402
from app.data.loading import DataLoadError, read_upload  # noqa: E402
from app.data.samples import SAMPLES  # noqa: E402
from app.data.script import python_script  # noqa: E402
from app.data.store import Store, parse_cut_points  # noqa: E402
from app.shell.choices import available_models, detect_device  # noqa: E402
from app.survival.jobs import coefficient_comparison, comparison  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

ROSSI_FIN_EFRON = -0.3794222


@pytest.fixture
def store():
    s = Store()
    s.load_sample("rossi")
    return s


def run_script(text: str) -> dict:
    """Execute a generated script; return its namespace (stdout swallowed)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(text, "<survscan script>", "exec"), namespace)
    return namespace


def test_rossi_roles_and_validation_report(store):
    assert (store.time, store.event, store.treatment) == ("week", "arrest", "fin")
    r = store.validation_report()
    assert r["ok"] and r["error"] == ""
    assert (r["rows"], r["events"], r["censored"]) == (432, 114, 318)
    assert r["covariates"] == 7 and r["strata"] == 1
    assert r["problems"].empty


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_validates(name):
    s = Store()
    s.load_sample(name)
    assert s.validation_report()["ok"]


def test_event_codes_count_chosen_causes():
    s = Store()
    s.load_sample("bmtcrr")
    assert s.event_codes == [1, 2]
    assert s.validation_report()["events"] == 131  # Status 1 (relapse) or 2 (death)
    s.event_codes = [1]
    r = s.validation_report()
    assert r["ok"] and r["events"] == int((s.data["Status"] == 1).sum())


def test_bad_roles_give_the_engines_message_not_an_exception(store):
    store.data = store.data.assign(week=store.data["week"].astype(object))
    store.data.loc[3, "week"] = "soon"
    r = store.validation_report()
    assert not r["ok"]
    assert "column 'week'" in r["error"] and "not a number" in r["error"]
    assert "week" in set(r["problems"]["column"])
    store.time = None
    assert "choose the time column" in store.validation_report()["error"]


def test_read_upload_errors_are_readable():
    with pytest.raises(DataLoadError, match="could not read 'bad.csv'"):
        read_upload("bad.csv", b'a,b\n1,2\n3,4,5,6\n"x\n')
    with pytest.raises(DataLoadError, match="is empty"):
        read_upload("empty.csv", b"")
    with pytest.raises(DataLoadError, match="open a .csv or .parquet"):
        read_upload("data.xlsx", b"PK\x03\x04")


def test_upload_csv_and_parquet_guess_roles(rossi):
    s = Store()
    frame = rossi.rename(columns={"week": "time", "arrest": "status"})
    s.load_upload("prisoners.csv", frame.to_csv(index=False).encode())
    assert (s.time, s.event, s.treatment) == ("time", "status", "fin")
    assert set(s.covariates) == {"fin", "age", "race", "wexp", "mar", "paro", "prio"}
    assert s.validation_report()["ok"]
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    s.load_upload("prisoners.parquet", buffer.getvalue())
    assert s.source["kind"] == "parquet" and s.n_rows == 432


def test_failed_load_keeps_the_data(store):
    with pytest.raises(DataLoadError):
        store.load_upload("bad.csv", b'a,b\n1,2\n3,4,5,6\n"x\n')
    assert store.source["name"] == "rossi" and store.n_rows == 432


def test_duckdb_samples_and_read_only_file(tmp_path, rossi, monkeypatch):
    import duckdb

    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(tmp_path))
    s = Store()
    s.load_duckdb("", "SELECT * FROM rossi WHERE age > 30")
    assert s.n_rows == int((rossi["age"] > 30).sum())
    assert s.time == "week" and s.event == "arrest"
    path = tmp_path / "cohort.duckdb"
    con = duckdb.connect(str(path))
    con.register("rossi_df", rossi)
    con.execute("CREATE TABLE cohort AS SELECT * FROM rossi_df")
    con.close()
    s.load_duckdb(str(path), "SELECT week, arrest, fin, age FROM cohort")
    assert s.n_rows == 432 and s.covariates == ["fin", "age"]
    with pytest.raises(DataLoadError, match="only a read-only SELECT"):
        s.load_duckdb(str(path), "DROP TABLE cohort")
    with pytest.raises(DataLoadError, match="DuckDB query failed"):
        s.load_duckdb(str(path), "SELECT * FROM no_such_table")
    with pytest.raises(DataLoadError, match="no DuckDB file"):
        s.load_duckdb(str(tmp_path / "missing.duckdb"), "SELECT 1")
    assert s.n_rows == 432  # still there


def test_parse_cut_points():
    assert parse_cut_points("30, 10;10 ") == [10.0, 30.0]
    for bad in ("", "ten", "-1", "inf"):
        with pytest.raises(DataLoadError):
            parse_cut_points(bad)


def test_fit_job_reproduces_the_engine(store):
    bench = Workbench(store=store)
    kept = bench.fit_job("a").run()
    assert kept.summary.loc["fin", "coef"] == pytest.approx(ROSSI_FIN_EFRON, abs=1e-6)
    assert kept.summary.loc["fin", "hr"] == pytest.approx(math.exp(ROSSI_FIN_EFRON), abs=1e-6)
    assert kept.row()["treatment ratio"] == "fin: HR 0.6843"


def test_cut_points_give_interval_coefficients(store):
    bench = Workbench(store=store)
    store.cut_points = {"fin": [10.0]}
    kept = bench.fit_job().run()
    assert {"fin[0,10)", "fin[10,inf)"} <= set(kept.summary.index)
    assert "fin" not in kept.summary.index
    store.covariates = [c for c in store.covariates if c != "fin"]
    with pytest.raises(DataLoadError, match="not covariates"):
        bench.fit_job()


def test_cancel_from_the_progress_callback():
    s = Store()
    bench = Workbench(store=s)
    s.load_simulated(5_000, 40, seed=3)
    s.solver = "ccd"
    cancel, seen = threading.Event(), []

    def progress(done, total):
        seen.append((done, total))
        if done >= 2:
            cancel.set()

    with pytest.raises(engine.Cancelled, match="fit cancelled, iteration 2"):
        bench.fit_job().run(cancel, progress)
    assert seen == [(1, 1000), (2, 1000)]


def test_penalty_unpenalized_and_options(store):
    bench = Workbench(store=store)
    store.param.update(penalty="L1", strength=5.0, unpenalized=["fin", "not-a-covariate"])
    opts = store.fit_options()
    assert isinstance(opts["penalty"], engine.L1) and opts["penalty"].lam == 5.0
    assert opts["unpenalized"] == ["fin"]
    kept = bench.fit_job().run()
    assert not kept.summary.loc["fin", "penalized"] and kept.summary.loc["age", "penalized"]
    store.penalty = "none"
    assert store.fit_options()["unpenalized"] == []


def test_spec_is_json_and_script_reproduces_the_fit(store):
    bench = Workbench(store=store)
    store.param.update(strata=["race"], cut_points={"fin": [10.0]}, penalty="L2", strength=2.0,
                       unpenalized=["fin"], ties="breslow")
    store.covariates = [c for c in store.covariates if c != "race"]
    spec = json.loads(store.spec_json())
    assert spec["design"]["cut_points"] == {"fin": [10.0]}
    assert spec["roles"]["strata"] == ["race"]
    kept = bench.fit_job().run()
    ns = run_script(store.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-8)
    assert python_script(spec) == store.python_script()


def test_script_draws_what_results_draws(store):
    """The script's PH check, residuals, prediction metrics and adjusted curves are the
    engine's on the kept fit, as Results shows them; a cut-point design gets the PH check (of
    its episodes) and the residuals (per subject) without prediction metrics or adjusted
    curves."""
    from app.survival.prediction import default_times
    from app.survival.residuals import covariate_options

    bench = Workbench(store=store)
    kept = bench.fit_job().run()
    res = kept.result
    ns = run_script(store.python_script())
    rossi = store.data
    times = np.unique(rossi["week"][rossi["arrest"] > 0])
    pd.testing.assert_frame_equal(ns["adjusted"].contrasts, engine.adjusted_curves(
        res, "fin", times=times).contrasts, rtol=1e-10)
    assert "engine.ph_test(res)" in store.python_script()
    assert sorted(ns["forms"]) == sorted(covariate_options(res)) == ["age", "prio"]
    pd.testing.assert_frame_equal(ns["forms"]["age"], engine.functional_form(res, "age"),
                                  rtol=1e-8)
    pd.testing.assert_series_equal(ns["deviance"], engine.residuals(res, "deviance"),
                                   rtol=1e-8)
    np.testing.assert_allclose(ns["dfbetas"]["fin"], engine.residuals(
        res, "dfbeta", columns=["fin"])["fin"] / res.se["fin"], rtol=1e-8)
    shown = [float(t) for t in default_times(res).split(", ")]   # the Results page's box
    assert ns["performance"].by_time["time"].tolist() == shown
    pd.testing.assert_series_equal(ns["performance"].summary, engine.predictive_performance(
        res, times=shown).summary, rtol=1e-8)
    store.cut_points = {"fin": [10.0]}
    kept = bench.fit_job().run()
    text = store.python_script()
    assert "ph_test" in text and "adjusted_curves" not in text
    assert "predictive_performance" not in text
    ns = run_script(text)
    pd.testing.assert_frame_equal(engine.ph_test(ns["res"]).table,
                                  engine.ph_test(kept.result).table, rtol=1e-8)
    assert list(ns["dfbetas"].columns) == ["fin[0,10)", "fin[10,inf)"]
    assert len(ns["deviance"]) == len(rossi)
    store.cut_points = {}
    store.forms = {"age": "ns4"}
    assert "ph_test" in store.python_script() and "adjusted_curves" in store.python_script()
    store.forms = {"fin": "ns3"}
    assert "adjusted_curves" not in store.python_script()


@pytest.mark.parametrize("typed, written", [
    ("fin * ns(prio, df=3) + rcs(age, 4) + race + strata(wexp)",
     "formula='fin + ns(prio, df=3) + rcs(age, 4)"),
    ("C(race) * fin + poly(age, 3) * mar + prio + strata(wexp)",
     "formula='C(race) + fin + poly(age, 3) + mar + prio + C(race):fin + poly(age, 3):mar'"),
])
def test_script_reproduces_a_fit_with_splines_and_interactions(store, typed, written):
    bench = Workbench(store=store)
    store.apply_formula(typed)
    kept = bench.fit_job().run()
    text = store.python_script()
    assert written in text and "strata=['wexp']" in text
    ns = run_script(text)
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-10)
    assert ns["cohort"].formula.text == kept.result.formula.text
    from app.survival.terms import effect_curves      # what Results draws of each spline

    shown = effect_curves(kept.result)
    assert sorted(ns["hr_curves"]) == sorted(shown) and shown
    for name, curve in shown.items():
        pd.testing.assert_frame_equal(ns["hr_curves"][name], curve, rtol=1e-8)
    assert sorted(ns["term_plots"]) == sorted(shown)      # the Residuals page's term plots
    for name, plot in ns["term_plots"].items():
        pd.testing.assert_frame_equal(plot.curve, engine.term_plot(kept.result, name).curve,
                                      rtol=1e-8)


def test_script_with_event_codes_and_start_stop():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("bmtcrr")
    kept = bench.fit_job().run()
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-8)
    s.load_sample("stanford_heart")
    kept = bench.fit_job().run()
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-8)


def test_simulated_cohort_roles_subset_and_script():
    s = Store()
    bench = Workbench(store=s)
    s.load_simulated(3_000, 12, density=0.1, n_strata=4, seed=2)
    assert s.columns[:3] == ["time", "event", "strata"] and s.strata == ["strata"]
    assert s.build_cohort() is s.simulated  # no copy when every column is used
    s.covariates = ["x0", "x3", "x5"]
    cohort = s.build_cohort()
    assert cohort.names == ["x0", "x3", "x5"] and cohort.n_strata == 4
    kept = bench.fit_job().run()
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-8)
    assert s.column("x3").isin([0.0, 1.0]).all()
    assert s.preview(10).shape == (10, 3 + 12)
    assert s.subsample_factory(500)().n == 500


def test_load_simulated_rejects_bad_sizes(store):
    with pytest.raises(DataLoadError, match="cannot simulate"):
        store.load_simulated(100, 5, density=0)
    assert store.source["name"] == "rossi"


def test_subsample_keeps_whole_subjects():
    s = Store()
    s.load_sample("stanford_heart")
    cohort = s.subsample_factory(60)()
    ids = pd.Series(cohort.id)
    full = s.data.groupby("id").size()
    assert (ids.value_counts().sort_index() == full.loc[ids.unique()].sort_index()).all()


def test_fits_comparison_and_sessions_are_separate(store):
    bench = Workbench(store=store)
    other = Store()
    other_bench = Workbench(store=other)
    other.load_sample("rossi")
    bench.keep(bench.fit_job("base").run())
    store.cut_points = {"fin": [10.0]}
    bench.keep(bench.fit_job("cut").run())
    assert other_bench.fits == [] and bench.get_fit("base").name == "base"
    comp = comparison(bench.fits)
    assert list(comp["fit"]) == ["base", "cut"]
    assert comp.loc[1, "cut points"] == "fin at 10"
    assert list(comp["strata"]) == [1, 1]  # the user's strata, not the cut-point intervals
    side = coefficient_comparison(bench.fits)
    assert side.loc["fin", "base"] == pytest.approx(math.exp(ROSSI_FIN_EFRON), abs=1e-6)
    assert np.isnan(side.loc["fin", "cut"]) and not np.isnan(side.loc["fin[0,10)", "cut"])
    removed = bench.get_fit("base").result
    bench.remove_fit("base")
    assert [f.name for f in bench.fits] == ["cut"]
    with pytest.raises(RuntimeError, match="released"):  # its problem (GPU memory) is freed
        removed.problem.solve(0.0, 0.0)
    assert bench.next_fit_name() == "fit 2"


def test_detect_device_says_cpu_without_cuda():
    text = detect_device()
    assert text.startswith("CPU") or text.startswith("GPU")
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert text == "CPU (no GPU: CuPy is not installed (pip install 'survscan[gpu]'))"


def test_fine_gray_uses_causes_breslow_and_the_script_reproduces_it():
    if "fine_gray" not in available_models():
        pytest.skip("the engine has no Fine-Gray yet")
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("bmtcrr")
    s.param.update(model="fine_gray", cause=1)
    assert s.cause_options() == [1, 2]
    r = s.validation_report()
    assert r["ok"] and r["causes"] == {1: 56, 2: 75}
    assert s.fit_options()["ties"] == "breslow" and s.fit_options()["cause"] == 1
    kept = bench.fit_job().run()
    assert kept.result.n_events == 56 and kept.row()["model"] == "fine_gray (cause 1)"
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-8)
    s.model = "cox"  # back to Cox: codes 1 and 2 both count as events again
    assert s.validation_report()["events"] == 131 and "cause" not in s.fit_options()


def test_subsample_with_replacement_beyond_the_data(store):
    assert store.subsample_factory(1_000, replace=True)().n == 1_000
    assert store.subsample_factory(1_000)().n == 432
    heart = Store()
    heart.load_sample("stanford_heart")  # subject ids: never duplicated
    assert heart.subsample_factory(1_000, replace=True)().n == 172


def test_analysis_spec_round_trips_through_json_and_refuses_other_files(store):
    from app.data.script import AnalysisSpec

    spec = store.analysis_spec()
    again = AnalysisSpec.from_json(spec.to_json())
    assert again == spec and again.to_dict() == store.spec()
    assert again.python_script() == store.python_script()
    with pytest.raises(ValueError, match="not JSON"):
        AnalysisSpec.from_json("{")
    with pytest.raises(ValueError, match="version"):
        AnalysisSpec.from_json('{"survscan": 99}')
    broken = store.spec()
    del broken["roles"]["time"]
    with pytest.raises(ValueError, match="roles.time"):
        AnalysisSpec.from_dict(broken)
