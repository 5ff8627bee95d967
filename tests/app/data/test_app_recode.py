"""Recode and filter on the Data tab (app/data/recode.py): each step against a brute-force pandas
computation and against its own script line; steps as data versions with the roles kept, in
the exported script; the R-style 1/2 status message; strata leave the covariates; the
side-by-side comparison only across fits of the same data."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("param")

import engine  # noqa: E402
from app.data.loading import DataLoadError  # noqa: E402
from app.data.recode import (apply_step, describe, parse_mapping, reference_step,  # noqa: E402
                        step_code)
from app.data.store import Store  # noqa: E402
from app.survival.jobs import coefficient_comparison  # noqa: E402
from app.survival.state import Workbench  # noqa: E402


def run_code(lines, df):
    namespace = {"df": df.copy(), "pd": pd}
    exec("\n".join(lines), namespace)
    return namespace["df"]


def run_script(text: str) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(text, "<survscan script>", "exec"), namespace)
    return namespace


@pytest.fixture
def rossi():
    return engine.datasets.load_rossi()


STEPS = [
    {"op": "range", "column": "age", "low": 20.0, "high": 30.0},
    {"op": "range", "column": "prio", "low": None, "high": 3.0},
    {"op": "values", "column": "race", "values": [1]},
    {"op": "cut", "column": "age", "cuts": [25.0, 35.0], "name": "age_group"},
    {"op": "recode", "column": "arrest", "mapping": [[0, 1], [1, 2]]},
]


@pytest.mark.parametrize("step", STEPS, ids=[s["op"] for s in STEPS])
def test_each_step_equals_its_script_line(rossi, step):
    pd.testing.assert_frame_equal(apply_step(rossi, step), run_code(step_code(step), rossi))


def test_steps_against_brute_force(rossi):
    kept = apply_step(rossi, STEPS[0])
    assert len(kept) == sum(20 <= a <= 30 for a in rossi["age"])
    groups = apply_step(rossi, STEPS[3])["age_group"].astype(str)
    expected = ["<25" if a < 25 else "[25,35)" if a < 35 else ">=35" for a in rossi["age"]]
    assert groups.tolist() == expected
    recoded = apply_step(rossi, STEPS[4])["arrest"]
    assert recoded.tolist() == [a + 1 for a in rossi["arrest"]]
    assert parse_mapping("1=0, 2=1; x=y") == [[1, 0], [2, 1], ["x", "y"]]


def test_reference_level_is_the_engines_reference(rossi):
    step = reference_step(rossi, "prio", 3)
    assert step["categories"][:3] == [3, 0, 1]
    df = apply_step(rossi, step)
    pd.testing.assert_frame_equal(df, run_code(step_code(step), rossi))
    cohort = engine.Cohort.from_frame(df, time="week", event="arrest", covariates=["fin", "prio"])
    assert cohort.reference_levels == {"prio": "3"} and "prio[0]" in cohort.names


def test_bad_steps_are_clear_errors(rossi):
    with pytest.raises(DataLoadError, match="no row of 'age'"):
        apply_step(rossi, {"op": "range", "column": "age", "low": 100.0, "high": None})
    with pytest.raises(DataLoadError, match="not in the table"):
        apply_step(rossi, {"op": "values", "column": "nope", "values": [1]})
    with pytest.raises(DataLoadError, match="not numeric"):
        apply_step(rossi.assign(g="a"), {"op": "cut", "column": "g", "cuts": [1.0]})
    with pytest.raises(DataLoadError, match="old=new"):
        parse_mapping("1 0")


def test_store_steps_are_data_versions_in_the_script_and_undoable():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    roles = (s.time, s.event, list(s.covariates))
    version = s.data_version
    s.apply_data_step({"op": "range", "column": "prio", "low": 0.0, "high": 5.0})
    s.apply_data_step({"op": "cut", "column": "age", "cuts": [20.0, 25.0], "name": "age_group"})
    s.apply_data_step(reference_step(s.data, "age_group", "[20,25)"))
    assert s.data_version == version + 3 and (s.time, s.event) == roles[:2]
    assert s.n_rows == int((engine.datasets.load_rossi()["prio"] <= 5).sum())
    s.covariates = ["fin", "prio", "age_group"]
    kept = bench.fit_job().run()
    assert "age_group[<20]" in kept.result.coef.index
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-10)
    assert len(kept.spec["data"]["steps"]) == 3
    s.undo_data_step()
    assert len(s.data_steps) == 2 and "age_group" in s.columns
    s.undo_data_step()
    s.undo_data_step()
    assert s.n_rows == 432 and s.data_steps == [] and "age_group" not in s.columns
    s.apply_data_step({"op": "values", "column": "race", "values": [1]})
    s.load_sample("rossi")                       # a new load starts without steps
    assert s.data_steps == [] and s.n_rows == 432


def test_r_style_status_points_at_the_event_codes_box(rossi):
    s = Store()
    s.load_frame(rossi.assign(status=rossi["arrest"] + 1).drop(columns="arrest"),
                 {"kind": "csv", "name": "r.csv", "label": "file: r.csv"})
    r = s.validation_report()
    assert not r["ok"] and "Event codes box" in r["error"]
    assert "competing_risks=True" not in r["error"]
    s.event_codes = [2]
    assert s.validation_report()["ok"] and s.validation_report()["events"] == 114


def test_a_stratum_leaves_the_covariates():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.param.update(penalty="L1", strength=1.0, unpenalized=["race", "fin"],
                   cut_points={"race": [10.0]})
    s.strata = ["race"]
    assert "race" not in s.covariates and s.unpenalized == ["fin"] and s.cut_points == {}
    kept = bench.fit_job().run()
    assert "race" not in kept.result.coef.index and kept.n_strata == 2


def test_side_by_side_hrs_only_across_fits_of_the_same_data():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    bench.keep(bench.fit_job("all").run())
    s.apply_data_step({"op": "values", "column": "race", "values": [0]})
    s.covariates = [c for c in s.covariates if c != "race"]
    bench.keep(bench.fit_job("race 0").run())
    side = coefficient_comparison(bench.fits)
    assert list(side.columns) == ["race 0"]
    both = coefficient_comparison(bench.fits, across_data=True)
    assert list(both.columns) == ["all", "race 0"] and math.isnan(both.loc["race", "race 0"])
    assert np.isfinite(both.loc["fin"]).all()


def test_saved_steps_reapply_to_the_same_table():
    s = Store()
    s.load_sample("rossi")
    steps = [{"op": "range", "column": "age", "low": 20.0, "high": None},
             {"op": "cut", "column": "prio", "cuts": [1.0, 4.0], "name": "prio_group"}]
    for step in steps:
        s.apply_data_step(step)
    again = Store()
    again.load_sample("rossi")
    again.apply_data_steps(s.spec()["data"]["steps"])
    pd.testing.assert_frame_equal(again.data, s.data)
    assert again.spec() == s.spec()
    again.undo_data_step()
    assert again.data_steps == steps[:1] and "prio_group" not in again.columns


PS_STEP = {"op": "psweight", "column": "fin", "covariates": ["age", "prio", "race"],
           "estimand": "ATE", "trim": None, "name": "ps_weight"}


def test_propensity_weights_step_equals_the_engine_and_its_script_line(rossi):
    out = apply_step(rossi, PS_STEP)
    want = engine.propensity_weights(rossi, treatment="fin", covariates=["age", "prio", "race"])
    np.testing.assert_array_equal(out["ps_weight"], want.weights)
    np.testing.assert_array_equal(out["ps_weight_ps"], want.ps)
    pd.testing.assert_frame_equal(out, _run_with_engine(step_code(PS_STEP), rossi))
    with pytest.raises(DataLoadError, match="propensity score of 'age'.*0/1"):
        apply_step(rossi, {**PS_STEP, "column": "age", "covariates": ["prio"]})


def _run_with_engine(lines, df):
    namespace = {"df": df.copy(), "pd": pd, "engine": engine}
    exec("\n".join(lines), namespace)
    return namespace["df"]


def test_weighting_by_a_propensity_score_on_the_data_tab():
    """The Data tab's step: the weight column becomes the Weights role, the fit reports the
    robust variance and equals engine.fit with engine.propensity_weights' weights, the
    exported script rebuilds it, the note gives balance and effective sample sizes, and an
    undo takes the column and the role away."""
    from app.data.recode_view import RecodeView

    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.covariates = ["fin", "age", "prio"]
    view = RecodeView(store=s)
    view.column.value, view.op.value = "fin", "psweight"
    view.ps_covariates.value = ["age", "prio", "race"]
    view.estimand.value = "ATT"
    view._apply()
    assert s.weights == "ps_weight" and "ps_weight_ps" in s.columns
    assert "effective sample size" in view.balance.object
    overlap, love = (pane.object for pane in view.ps_plots.objects)
    assert view.ps_plots.visible and len(love.get(0).data) == 3     # one point per covariate
    kept = bench.fit_job().run()
    rossi = engine.datasets.load_rossi()
    w = engine.propensity_weights(rossi, treatment="fin", covariates=["age", "prio", "race"],
                                  estimand="ATT").weights
    want = engine.fit(engine.Cohort.from_frame(rossi.assign(w=w), time="week", event="arrest",
                                               covariates=["fin", "age", "prio"], weights="w"),
                      ties=kept.result.spec["ties"])
    assert kept.result.variance == "robust" == want.variance
    pd.testing.assert_series_equal(kept.result.coef, want.coef, rtol=1e-10)
    pd.testing.assert_series_equal(kept.result.se, want.se, rtol=1e-8)
    ns = run_script(s.python_script())
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-10)
    view.column.value = "fin"
    view.ps_name.value = "ps_weight"
    with pytest.raises(DataLoadError, match="exists"):
        view.step()
    s.undo_data_step()
    assert s.weights is None and "ps_weight" not in s.columns and view.balance.object == ""
    assert not view.ps_plots.visible


def test_propensity_weights_carry_the_case_weights(rossi):
    """Case weights already in the Weights role multiply the PS weights (engine.propensity_
    weights' weights=), in the app and in its script line."""
    df = rossi.assign(w=np.random.default_rng(2).uniform(0.5, 2.0, len(rossi)))
    step = {**PS_STEP, "weights": "w"}
    out = apply_step(df, step)
    want = engine.propensity_weights(df, treatment="fin", covariates=["age", "prio", "race"],
                                     weights="w")
    np.testing.assert_array_equal(out["ps_weight"], want.weights)
    pd.testing.assert_frame_equal(out, _run_with_engine(step_code(step), df))
    assert "times the case weights w" in describe(step)
