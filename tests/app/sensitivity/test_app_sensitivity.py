"""The Sensitivity tab (app/sensitivity/view.py): the variants it offers from the current
analysis, their count before running, the study run as a job, its table equal to
engine.sensitivity_study's (whose variants equal their own engine.fit: tests/engine/sensitivity)
and a variant refitted here; a design it cannot study is a message."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402

COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def test_the_grid_runs_and_equals_the_engine(app):
    app.tabs.active = main.TABS.index("Sensitivity")
    view = app.sensitivity
    view.subgroup.value = "race"
    # 8 adjustment sets (all, fin alone, 6 drop-one) x 3 subgroups x 1 tie rule
    assert "**24 variants**" in view.size.object
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    shown = view.table.value
    rossi = engine.datasets.load_rossi()
    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest", covariates=COVARIATES)
    sets = {"all": COVARIATES, "fin alone": ["fin"],
            **{f"without {c}": [x for x in COVARIATES if x != c] for c in COVARIATES[1:]}}
    vary = {"covariates": sets, "ties": ["efron"],
            "subgroup": {"everyone": None, **{f"race = {v}": (rossi["race"] == v).to_numpy()
                                              for v in pd.unique(rossi["race"])}}}
    want = engine.sensitivity_study(cohort, ["fin"], vary, base={"ties": "efron"}).table
    assert len(shown) == 24
    np.testing.assert_allclose(shown["hr"].to_numpy(), want["hr"].to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(shown["evalue_point"], want["evalue_point"], rtol=1e-10)
    row = shown.set_index(["covariates", "subgroup"]).loc[("without race", "race = 1")]
    alone = engine.fit(engine.Cohort.from_frame(rossi[rossi["race"] == 1], time="week",
                                                event="arrest", covariates=sets["without race"]),
                       ties="efron")
    assert row["hr"] == pytest.approx(alone.summary.loc["fin", "hr"], rel=1e-8)
    assert view.results.visible and view.curve.object is not None


def test_without_a_treatment_it_says_why(app):
    app.store.treatment = None
    view = app.sensitivity
    assert view.run_button.disabled and "Treatment" in view.size.object
    assert view.csv.callback().getvalue() == "export failed: run the variants first\n"
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "failed" and view.result is None


def rossi_with(**columns):
    """rossi with extra columns, loaded as a file would be, fin the treatment."""
    return engine.datasets.load_rossi().assign(**columns)


def load(app, df):
    app.store.load_frame(df, {"kind": "csv", "name": "r.csv", "label": "file: r.csv"})
    app.store.param.update(time="week", event="arrest", covariates=COVARIATES, treatment="fin")


def test_strata_penalties_follow_up_and_cut_points_equal_engine_fit(app):
    """Each new axis: the count and cost before running (engine's grid_cost on the store's
    shape equals the study's own estimate), then every variant of the forest equal to
    engine.fit of its fit_arguments, the L2 strength 0.1 x engine.lambda_max, and a follow-up
    end before any event a row that says why while the rest finishes."""
    from app.sensitivity import grid

    view = app.sensitivity
    view.adjust.value = ["all"]
    view.strata.value = ["own", "wexp"]
    view.penalty.value = ["own", "L2 at 0.1 x lambda_max"]
    view.follow_up.value = "0.5, 26"
    view.cuts.value = "20"
    assert "**24 variants**" in view.size.object
    assert "(2 strata x 2 penalty x 3 follow_up x 2 cut_points)" in view.size.object
    estimate = grid.cost(app.store, view.picks(), 600)
    assert f"about {estimate['seconds']:.2g} s and {estimate['bytes'] / 1e6:.3g} MB" \
        in view.size.object
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    result, shown = view.result, view.table.value
    assert result.cost["bytes"] == estimate["bytes"]
    assert result.cost["seconds"] == pytest.approx(estimate["seconds"], rel=1e-12)
    assert shown["variant"].nunique() == 24
    cohort = engine.Cohort.from_frame(engine.datasets.load_rossi(), time="week", event="arrest",
                                      covariates=COVARIATES)
    top = engine.lambda_max(cohort, penalty="l1", unpenalized=["fin"], ties="efron")
    assert view.outcome.lambda_max == pytest.approx(top, rel=1e-12)
    assert f"lambda_max = {top:.4g}" in view.forest_caption.object
    assert f"L2({0.1 * top:.4g})" in view.forest_caption.object
    forest = grid.by_axis(result, result.table)
    assert set(forest["axis"]) == {"strata", "penalty", "follow_up", "cut_points"}
    for v in forest.loc[forest["error"] == "", "variant"].unique():
        args = result.fit_arguments(v)
        if args["penalty"] is not None:
            assert args["penalty"] == engine.L2(0.1 * top)
        with warnings.catch_warnings():          # wexp is aliased when stratified by it
            warnings.simplefilter("ignore", engine.DataWarning)
            want = engine.fit(**args).summary
        for row in shown[shown["variant"] == v].itertuples():
            assert row.hr == pytest.approx(want.loc[row.coefficient, "hr"], rel=1e-6)
    early = shown[shown["follow_up"] == "end at 0.5"]
    assert len(early) == 8 and early["error"].str.contains("no events").all()
    assert np.isfinite(shown.loc[shown["error"] == "", "hr"]).all()
    split = shown[shown["cut_points"] == "fin@20"]
    assert {"fin[0,20)", "fin[20,inf)"} <= set(split["coefficient"])
    assert view.forest.object is not None and view.results.visible
    title = view.curve.object.opts.get().kwargs["title"]
    assert title == "Specification curve: 24 estimates of 16 variants (8 failed, left out), 95% CI"


def test_a_stratum_column_of_one_level_says_so(app):
    load(app, rossi_with(site=1))
    view = app.sensitivity
    assert "by site" in view.strata.options
    view.adjust.value = ["all"]
    view.strata.value = ["own", "site"]
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    shown = view.table.value
    one = shown[shown["strata"] == "by site"]
    assert one["note"].str.contains("site has one level").all()
    assert one["hr"].iloc[0] == pytest.approx(shown["hr"].iloc[0], rel=1e-8)


def test_negative_controls_calibrate_as_the_engine(app):
    """Negative-control event columns: the calibrated p and CI shown equal
    SensitivityResult.calibrate of engine.negative_control_estimates, over the analysis's
    follow-up; the funnel is drawn."""
    rng = np.random.default_rng(7)
    controls = {f"nc{k}": rng.binomial(1, 0.3, 432) for k in range(6)}
    load(app, rossi_with(**controls))
    view = app.sensitivity
    assert set(controls) <= set(view.controls.options.values())
    assert "nc0" in view.strata.options.values()       # a 0/1 column may stratify ...
    view.adjust.value = ["all", "alone"]
    view.strata.value = ["own", "nc0"]
    view.controls.value = list(controls)
    assert not set(controls) & set(view.strata.options.values())  # ... not once a control
    assert view.strata.value == ["own"]
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    df = rossi_with(**controls)
    cohort = engine.Cohort.from_frame(df, time="week", event="arrest", covariates=COVARIATES)
    estimates = engine.negative_control_estimates(
        cohort, {c: (cohort.time, df[c].to_numpy()) for c in controls}, "fin",
        {"ties": "efron", "unpenalized": ["fin"], "penalty": None, "cut_points": None})
    want = view.result.calibrate(estimates)
    shown = view.table.value
    for column in ("calibrated_p", "calibrated_hr", "calibrated_lower", "calibrated_upper"):
        np.testing.assert_allclose(shown[column], want[column], rtol=1e-10)
    null = engine.fit_null(estimates["log_rr"], estimates["se"])
    assert view.outcome.null.sd == pytest.approx(null.sd, rel=1e-10, abs=1e-12)
    assert view.funnel_box.visible and view.funnel.object is not None
    assert f"{null.mean:.3f}" in view.calibration.object


def test_exports_table_figure_and_script(app):
    """The CSV is the table shown, the figure a PNG and an SVG, and the script, run, gives
    the same hazard ratios."""
    view = app.sensitivity
    view.adjust.value = ["all", "alone"]
    view.subgroup.value = "race"
    view.penalty.value = ["own", "L1 at 0.02 x lambda_max"]
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    shown = view.table.value
    csv = pd.read_csv(view.csv.callback())
    np.testing.assert_allclose(csv["hr"], shown["hr"], rtol=1e-12)
    assert {"estimate", "se", "converged", "penalty", "evalue_ci"} <= set(csv.columns)
    assert view.png.callback().getvalue()[:4] == b"\x89PNG"
    assert b"<svg" in view.svg.callback().getvalue()
    code = view.script.object.removeprefix("```python\n").removesuffix("\n```")
    assert "engine.sensitivity_study(cohort, ['fin'], vary" in code
    scope = {}
    exec(compile(code.replace("print(table)", ""), "sensitivity_script", "exec"), scope)
    np.testing.assert_allclose(scope["table"]["hr"], shown["hr"], rtol=1e-10)


def test_a_grid_over_the_time_limit_is_refused(app):
    view = app.sensitivity
    view.subgroup.value = "race"
    view.strata.value = ["own", "wexp"]
    view.penalty.value = ["own", "L2 at 0.1 x lambda_max"]
    view.follow_up.value = "5, 10, 20, 30"
    view.cuts.value = "20"
    view.ties.value = ["breslow", "efron"]          # 3,840 variants: a few seconds estimated
    view.max_seconds.value = 1
    assert "**Refused**" in view.size.object and "max_seconds=1" in view.size.object
    assert view.run_button.disabled
    asyncio.run(view.run_study())          # the engine refuses it too, on the cohort
    assert view.runner.last_outcome == "failed" and "estimated to take" in view.status.object


def test_a_simulated_cohort_varies_its_own_strata(app):
    """Simulated data (no table): the analysis's strata against none, counted and costed from
    the cohort held; each variant equals engine.fit of its own cohort."""
    app.store.load_simulated(3000, 8, density=0.3, n_strata=3, seed=2)
    app.store.treatment = "x0"
    view = app.sensitivity
    assert list(view.strata.options) == ["as analysed (by strata)", "none"]
    view.adjust.value = ["all"]
    view.strata.value = ["own", "none"]
    assert "**2 variants**" in view.size.object
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    shown = view.table.value
    assert list(shown["strata"]) == ["as analysed (by strata)", "none"]
    cohort = app.store.simulated
    own = engine.fit(cohort, ties="efron").summary.loc["x0", "hr"]
    none = engine.fit(engine.Cohort.from_arrays(cohort.time, cohort.event, cohort.X,
                                                names=cohort.names), ties="efron")
    np.testing.assert_allclose(shown["hr"], [own, none.summary.loc["x0", "hr"]], rtol=1e-6)
    assert "cohort.strata" in view.script.object


def test_an_age_band_cut_on_the_data_tab_is_a_strata_design(app):
    """Age cut into bands (the Data tab's Recode step) is offered as a stratum; the study's
    script rebuilds the band and gives the same hazard ratios."""
    app.store.apply_data_step({"op": "cut", "column": "age", "cuts": [20.0, 25.0, 30.0],
                               "name": "age_band"})
    view = app.sensitivity
    assert view.strata.options["by age_band"] == "age_band"
    view.adjust.value = ["all"]
    view.strata.value = ["own", "age_band"]
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    shown = view.table.value
    rossi = engine.datasets.load_rossi()
    band = np.searchsorted([20.0, 25.0, 30.0], rossi["age"], side="right")
    want = engine.fit(engine.Cohort.from_frame(rossi.assign(band=band), time="week",
                                               event="arrest", covariates=COVARIATES,
                                               strata=["band"]), ties="efron")
    assert shown["hr"].iloc[1] == pytest.approx(want.summary.loc["fin", "hr"], rel=1e-6)
    scope = {}
    code = view.script.object.removeprefix("```python\n").removesuffix("\n```")
    exec(compile(code.replace("print(table)", ""), "sensitivity_script", "exec"), scope)
    np.testing.assert_allclose(scope["table"]["hr"], shown["hr"], rtol=1e-10)


def test_quartiles_of_follow_up_fill_the_box(app):
    view = app.sensitivity
    view.quartiles.clicks += 1
    q = engine.datasets.load_rossi()["week"].quantile([0.25, 0.5, 0.75])
    assert list(q) == [50, 52, 52]             # most of rossi is followed for 52 weeks
    assert view.follow_up.value == "50, 52"
    assert "x 3 follow_up" in view.size.object
    view.follow_up.value = "ten"
    assert "Not ready: end of follow-up 'ten' is not a number" in view.size.object
    assert view.run_button.disabled


def test_too_few_negative_controls_are_said_and_the_study_stays(app):
    rng = np.random.default_rng(8)
    controls = {f"nc{k}": rng.binomial(1, 0.3, 432) for k in range(3)}
    load(app, rossi_with(**controls))
    view = app.sensitivity
    view.adjust.value = ["all"]
    view.controls.value = list(controls)
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    assert "fewer than 5" in view.calibration.object and view.funnel_box.visible
    view.controls.value = ["nc0"]
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    assert not view.funnel_box.visible and "calibrated_p" not in view.table.value
    assert view.outcome.warnings[0].startswith("no calibration: fit_null needs at least 2")


def test_a_spline_and_an_interaction_of_the_design(app):
    """A design with age as a natural spline and its interaction with fin: dropping age drops
    its basis and the interaction (fin:ns(age, df=3)[k]), the treatment's own coefficient is
    reported, each variant equals engine.fit and the script rebuilds the cohort from the
    formula."""
    app.store.param.update(forms={"age": "ns3"}, interactions=[["fin", "age"]])
    view = app.sensitivity
    asyncio.run(view.run_study())
    assert view.runner.last_outcome == "done", view.status.object
    result, shown = view.result, view.table.value
    names = result.axes.choices["covariates"]["without age"]
    assert not any("age" in n for n in names)
    assert "fin:ns(age, df=3)[1]" in result.cohort.names
    assert set(shown["coefficient"]) == {"fin"}
    for v in shown["variant"]:
        want = engine.fit(**result.fit_arguments(v)).summary.loc["fin", "hr"]
        assert shown.loc[shown["variant"] == v, "hr"].iloc[0] == pytest.approx(want, rel=1e-6)
    code = view.script.object.removeprefix("```python\n").removesuffix("\n```")
    assert "formula=" in code
    scope = {}
    exec(compile(code.replace("print(table)", ""), "sensitivity_script", "exec"), scope)
    np.testing.assert_allclose(scope["table"]["hr"], shown["hr"], rtol=1e-10)
