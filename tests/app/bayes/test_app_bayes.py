"""The Bayesian page without a browser: BayesState's data, job and tables against engine.sample /
engine.probit_mle called directly, bad input as messages that keep the last run, Cancel, the
exports, and the exported script rerunning the same draws."""

from __future__ import annotations

import asyncio
import json
import re
import runpy
import threading

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")
pytest.importorskip("holoviews")

import engine  # noqa: E402
from app.bayes.state import LOADED, BayesState  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.bayes.view import BayesView  # noqa: E402

SMALL = {"draws": 40, "burn_in": 10, "chains": 2, "seed": 5}


@pytest.fixture(scope="module")
def breast_run():
    state = BayesState(store=Store(), **SMALL)
    return state, state.job().run()


def test_default_is_breast_cancer_mean_features_and_matches_engine(breast_run):
    state, run = breast_run
    assert state.outcome() == "target_benign" and len(state.predictors) == 10
    assert all(p.startswith("mean ") for p in state.predictors)
    df = engine.datasets.load_breast_cancer()
    cohort = engine.Cohort.from_frame(df, time=None, event="target_benign",
                                      covariates=state.predictors)
    post = engine.sample(cohort, draws=40, burn_in=10, chains=2, seed=5)
    np.testing.assert_array_equal(run.posterior.draws, post.draws)
    mle = engine.probit_mle(cohort)
    np.testing.assert_array_equal(run.mle.coef, mle.coef)
    assert run.mle_note == ""


def test_tables_are_the_engines_numbers_reshaped(breast_run):
    state, run = breast_run
    state.per_sd = False
    table = state.comparison(run).set_index("coefficient")
    assert table.loc["(intercept)", "posterior mean"] == run.summary.loc["(intercept)", "mean"]
    assert table.loc["mean radius", "MLE"] == run.mle.coef["mean radius"]
    assert (table["90% interval holds 0"] == run.summary["shrunk"]).all()
    assert "shrunk to 0" not in table.columns
    state.per_sd = True
    sd = engine.datasets.load_breast_cancer()["mean area"].std(ddof=0)
    per_sd = state.comparison(run).set_index("coefficient")
    assert "(intercept)" not in per_sd.index
    assert per_sd.loc["mean area", "MLE"] == pytest.approx(run.mle.coef["mean area"] * sd,
                                                           rel=1e-12)
    assert per_sd.loc["mean area", "5%"] == pytest.approx(run.summary.loc["mean area", "q5"] * sd,
                                                          rel=1e-12)
    intervals = state.intervals(run)
    assert list(intervals.index) == state.predictors
    assert (intervals["q2.5"] <= intervals["q5"]).all()
    assert (intervals["q95"] <= intervals["q97.5"]).all()
    diag = state.diagnostics(run)
    assert list(diag.columns) == ["coefficient", "r_hat", "ess", "ess_tail", "mcse_mean",
                                  "ess_per_s"]
    traces = state.traces(run, ["mean radius"])
    assert len(traces) == 2 * 40
    chain1 = traces[traces["chain"] == 1]["value"].to_numpy()
    np.testing.assert_allclose(chain1, run.posterior.draws[1, :, 1] * engine.datasets
                               .load_breast_cancer()["mean radius"].std(ddof=0), rtol=1e-12)
    acf = state.autocorrelations(run, ["mean radius", "mean area"])
    want = engine.autocorrelation(run.posterior.draws[:, :, [1, 4]], max_lag=39)
    got = acf.pivot(index="lag", columns="coefficient", values="autocorrelation")
    np.testing.assert_array_equal(got[["mean radius", "mean area"]].to_numpy(), want)


def test_all_thirty_features_sample_without_an_mle(breast_run):
    state = BayesState(store=Store(), draws=10, burn_in=2, chains=1)
    state.predictors = state.predictor_options()
    run = state.job().run()
    assert run.mle is None and "separate 'target_benign'" in run.mle_note
    # the sampler's own separation warning reaches the page's messages (issue 30)
    assert any("separate 'target_benign'" in w and "prior's tails" in w for w in run.warnings)
    assert "MLE" not in state.comparison(run)


def test_loaded_data_event_codes_become_the_outcome():
    store = Store()
    store.load_sample("bmtcrr")             # Status 0/1/2; codes 1 and 2 are events
    state = BayesState(store=store, source=LOADED, draws=10, burn_in=2, chains=1)
    assert state.outcome() == "Status" and state.event_codes() == [1, 2]
    assert "Status" not in state.predictor_options()
    assert state.predictors == ["Age", "Sex", "Source"]     # the Design tab's covariates
    frame = state.frame()
    expected = store.data["Status"].isin([1, 2]).astype(int)
    np.testing.assert_array_equal(frame["Status"], expected)
    run = state.job().run()
    assert run.cohort.n_events == int(expected.sum())


def test_exports_and_the_script_reproduces_the_run(breast_run, tmp_path):
    state, run = breast_run
    summary = pd.read_csv(pd.io.common.StringIO(state.summary_csv(run)), index_col=0)
    np.testing.assert_allclose(summary["mean"], run.summary["mean"], rtol=1e-12)
    np.testing.assert_allclose(summary["mle_coef"], run.mle.coef, rtol=1e-12)
    spec = json.loads(state.spec_json(run))
    assert spec["sample"]["seed"] == 5 and spec["engine_spec"]["beta_route"] == "cholesky"
    nc = tmp_path / "draws.nc"
    nc.write_bytes(state.netcdf(run))
    import arviz as az

    idata = az.from_netcdf(str(nc))
    np.testing.assert_array_equal(idata.posterior["beta"].values, run.posterior.draws)
    script = tmp_path / "bayes_run.py"
    script.write_text(state.python_script(spec))
    out = runpy.run_path(str(script), run_name="__main__")
    np.testing.assert_array_equal(out["post"].draws, run.posterior.draws)
    np.testing.assert_array_equal(out["mle"].coef, run.mle.coef)


def test_script_for_loaded_sample_with_codes_runs(tmp_path):
    store = Store()
    store.load_sample("bmtcrr")
    state = BayesState(store=store, source=LOADED, draws=8, burn_in=2, chains=1)
    run = state.job().run()
    script = tmp_path / "run.py"
    script.write_text(state.python_script(run.spec))
    out = runpy.run_path(str(script), run_name="__main__")
    np.testing.assert_array_equal(out["post"].draws, run.posterior.draws)


@pytest.fixture
def view():
    import panel as pn

    yield BayesView(state=BayesState(store=Store(), **SMALL))
    pn.state.reset()


def test_view_runs_draws_and_exports(view):
    asyncio.run(view.run_sampler())
    assert view.runner.last_outcome == "done" and view.state.run is not None
    res = view.results
    assert res.caterpillar.object is not None and len(res.shrinkage) == 2
    assert list(res.chosen.value) == ["mean radius", "mean texture"]
    assert len(res.traces) == 2 and res.acf.object is not None
    assert res.compare.value["coefficient"].tolist() == view.state.predictors
    html = res.plots_html()
    assert "<html" in html.lower() and "mean concave points" in html
    assert not any(w.disabled for w in res.downloads)
    csv = res.downloads[0].callback().getvalue()
    assert csv.startswith("coefficient,mean,sd")
    assert res.downloads[1].callback().getvalue()[:4] == b"\x89HDF"   # NetCDF-4 is HDF5
    view.state.run = None                       # a failing export is a message, not a traceback
    assert res.downloads[0].callback().getvalue().startswith("export failed:")


@pytest.mark.parametrize("frame, match", [
    (pd.DataFrame({"x": [1.0, 2, 3, 4, 5, 6], "event": [0, 1, 2, 0, 1, 1]}), "0/1"),
    (pd.DataFrame({"x": [1.0] * 6, "event": [0, 1, 0, 0, 1, 1]}), "no usable predictor"),
])
def test_bad_input_is_a_message_and_the_last_run_stays(view, frame, match):
    asyncio.run(view.run_sampler())
    kept = view.state.run
    store = view.state.store
    store.load_frame(frame, {"kind": "csv", "name": "bad.csv", "label": "file: bad.csv"})
    store.param.update(event="event", event_codes=[])
    view.state.source = LOADED
    view.state.predictors = ["x"]
    asyncio.run(view.run_sampler())
    assert view.runner.last_outcome == "failed" and match in view.status.object
    assert view.state.run is kept


def test_loaded_source_without_data_is_a_message(view):
    view.state.store.param.update(event=None)
    view.state.source = LOADED
    assert view.state.predictors == []
    asyncio.run(view.run_sampler())
    assert view.runner.last_outcome == "failed" and "choose at least one predictor" in view.status.object
    view.state.predictors = ["x"]
    asyncio.run(view.run_sampler())
    assert "load data and choose its event column first" in view.status.object
    assert view.state.run is None


def test_constant_predictor_is_dropped_with_a_warning():
    store = Store()
    df = engine.datasets.load_breast_cancer().iloc[:60][["mean radius", "target_benign"]]
    store.load_frame(df.assign(constant=1.0), {"kind": "csv", "name": "c.csv", "label": "c"})
    store.param.update(event="target_benign", event_codes=[])
    state = BayesState(store=store, source=LOADED, predictors=["mean radius", "constant"])
    job = state.job()
    assert job.cohort.names == ["mean radius"]
    assert any("constant" in w for w in job.warnings)


def test_too_few_rows_is_a_note_not_a_crash():
    store = Store()
    df = engine.datasets.load_breast_cancer().iloc[[0, 1, 19, 20]]
    store.load_frame(df[["mean radius", "mean texture", "mean area", "target_benign"]],
                     {"kind": "csv", "name": "few.csv", "label": "few"})
    store.param.update(event="target_benign", event_codes=[])
    state = BayesState(store=store, source=LOADED, draws=10, burn_in=2, chains=1,
                       predictors=["mean radius", "mean texture", "mean area"])
    run = state.job().run()
    assert run.mle is None and "too few rows" in run.mle_note


def test_cancel_keeps_the_last_run(view):
    async def go():
        view.state.draws = 200000
        task = asyncio.ensure_future(view.run_sampler())
        while "iteration" not in view.status.object:
            await asyncio.sleep(0.01)
        assert re.search(r"iteration [\d,]+ of 400,020, elapsed [\d.]+ s, ETA", view.status.object)
        view.runner.cancel()
        await task

    asyncio.run(go())
    assert view.runner.last_outcome == "cancelled" and view.state.run is None
    assert not view.runner.running and not view.run_button.disabled


def test_job_snapshot_ignores_later_changes():
    state = BayesState(store=Store(), **SMALL)
    job = state.job()
    state.seed = 99
    state.predictors = ["mean area"]
    assert job.settings["seed"] == 5 and len(job.cohort.names) == 10
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(engine.Cancelled):
        job.run(cancel)
