"""The penalty on the scale of lambda_max in the app: the strength as a fraction, the lambda
fitted and written in the script, the path on the Fit tab, and cross-validation's progress per
(fold, grid point) with a prompt Cancel."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.survival.jobs import CrossValidationJob  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

COVS = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def rossi_cohort():
    return engine.Cohort.from_frame(engine.datasets.load_rossi(), time="week", event="arrest",
                                    covariates=COVS)


def run_script(text: str) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(text, "<survscan script>", "exec"), namespace)
    return namespace


def test_fraction_of_lambda_max_is_the_fitted_lambda_and_the_script_reproduces_it():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.param.update(penalty="L1", ties="breslow", unpenalized=["fin"])
    assert s.strength_as == "fraction" and s.strength_fraction == 0.05
    top = engine.lambda_max(rossi_cohort(), unpenalized=["fin"])
    lam = float(f"{0.05 * top:.4g}")
    script_before = s.python_script()          # lambda_max not known yet: the script computes it
    assert "engine.lambda_max(cohort" in script_before
    job = bench.fit_job()
    kept = job.run()
    assert kept.spec["options"]["strength"] == lam
    assert kept.spec["options"]["lambda_max"] == pytest.approx(top, rel=1e-12)
    direct = engine.fit(rossi_cohort(), penalty=engine.L1(lam), unpenalized=["fin"])
    pd.testing.assert_series_equal(kept.result.coef, direct.coef, rtol=1e-10)
    pd.testing.assert_series_equal(run_script(script_before)["res"].coef, direct.coef,
                                   rtol=1e-10)
    s.note_lambda_max(job.scale["key"], kept.spec["options"]["lambda_max"])
    assert s.strength == lam and s.known_lambda_max() == top
    assert f"engine.L1({lam!r})" in s.python_script()
    s.strength_fraction = 0.5                   # a new fraction: the known scale applies at once
    assert s.strength == float(f"{0.5 * top:.4g}") and bench.fit_job().scale is None
    s.covariates = COVS[:-1]                    # another design: lambda_max unknown again
    assert s.known_lambda_max() is None and bench.fit_job().scale is not None


def test_a_typed_lambda_wins_until_a_fraction_is_typed():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.param.update(penalty="L2", strength=3.0)
    assert s.strength_as == "lambda" and bench.fit_job().scale is None
    assert s.fit_options()["penalty"].lam == 3.0
    s.strength_fraction = 0.1
    assert s.strength_as == "fraction" and bench.fit_job().scale is not None


def test_fit_tab_shows_lambda_max_and_draws_the_path(app):
    s = app.store
    s.param.update(covariates=COVS, penalty="L1", ties="breslow")
    app.workbench.cv_grid = 6
    asyncio.run(app.fit.run_fit())
    assert app.fit.runner.last_outcome == "done", app.fit.status.object
    top = engine.lambda_max(rossi_cohort())
    assert s.known_lambda_max() == pytest.approx(top, rel=1e-12)
    assert f"lambda_max {top:.4g}" in app.design.scale.object
    assert f"lambda {float(f'{0.05 * top:.4g}'):.4g}" in app.fit.summary.object
    asyncio.run(app.fit.run_path())
    assert app.fit.runner.last_outcome == "done", app.fit.status.object
    path = engine.path(rossi_cohort(), grid=6)
    pd.testing.assert_frame_equal(app.workbench.path.result.coef, path.coef, rtol=1e-8, atol=1e-10)
    view = app.fit.path_view
    assert view.body.visible and len(view.table.value) == 6
    s.strength_fraction = 0.2                  # the mark moves with the strength
    title = view.plot.object.values()[0].opts.get().kwargs["title"]
    assert f"dashed: lambda {float(f'{0.2 * top:.4g}'):.4g}" in title
    s.covariates = COVS[:3]                    # another design: the old path is hidden
    assert not view.body.visible


def test_cv_progress_names_fold_and_grid_point_and_cancel_acts_at_once(app, monkeypatch):
    s = app.store
    s.param.update(covariates=COVS, penalty="L1")
    app.workbench.param.update(cv_folds=3, cv_grid=4)
    original = CrossValidationJob.run
    statuses = []

    def cancel_after_first_step(self, cancel=None, progress=None):
        def step(done, total):
            progress(done, total)
            statuses.append((done, total))
            cancel.set()
        return original(self, cancel, step)

    monkeypatch.setattr(CrossValidationJob, "run", cancel_after_first_step)
    asyncio.run(app.fit.run_cv())
    assert statuses == [(1, 12)]
    assert app.fit.runner.last_outcome == "cancelled", app.fit.status.object
    assert "cancelled at fold 1 of 3, lambda 2 of 4" in app.fit.status.object
    assert app.workbench.fits == [] and app.workbench.cv is None and not app.fit.cv_button.disabled


def test_switching_to_fraction_applies_the_known_scale_and_cv_specs_keep_their_lambda():
    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    s.param.update(covariates=COVS, penalty="L1", ties="breslow")
    bench.param.update(cv_folds=3, cv_grid=3)
    top = engine.lambda_max(rossi_cohort())
    s.note_lambda_max(s.penalty_key(), top)
    s.strength = 7.0
    assert s.strength_as == "lambda" and s.fit_options()["penalty"].lam == 7.0
    s.strength_as = "fraction"
    assert s.fit_options()["penalty"].lam == float(f"{0.05 * top:.4g}")
    run, kept = bench.cv_job().run()
    assert kept.spec["options"]["strength_as"] == "lambda"
    assert kept.spec["options"]["lambda_max"] == pytest.approx(top, rel=1e-12)
    from app.data.script import python_script
    ns = run_script(python_script(kept.spec))
    pd.testing.assert_series_equal(ns["res"].coef, kept.result.coef, rtol=1e-6)
