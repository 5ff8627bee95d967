"""The Fit tab's bootstrap intervals: engine.bootstrap of the design as a fit takes it, shown
beside the model-based intervals while the design is unchanged; a penalty whose lambda_max is
not known yet is a message, not a traceback."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app import main  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


def test_bootstrap_intervals_are_the_engines_and_follow_the_design(app):
    s = app.store
    app.workbench.bootstrap_replicates = 40
    app.tabs.active = main.TABS.index("Fit")
    asyncio.run(app.fit.run_bootstrap())
    assert app.fit.runner.last_outcome == "done", app.fit.status.object
    view = app.fit.bootstrap_view
    shown = view.table.value.set_index("covariate")
    cohort = engine.Cohort.from_frame(s.data, time="week", event="arrest",
                                      covariates=list(s.covariates))
    oracle = engine.bootstrap(cohort, replicates=40, seed=0, ties="efron")
    np.testing.assert_allclose(shown["bootstrap lower"], np.exp(oracle.summary["lower"]),
                               rtol=1e-12)
    np.testing.assert_allclose(shown["bootstrap upper"], np.exp(oracle.summary["upper"]),
                               rtol=1e-12)
    fit = engine.fit(cohort, ties="efron").summary
    np.testing.assert_allclose(shown["model-based lower"], fit["hr_lower"], rtol=1e-9)
    assert view.body.objects and "40 replicates" in view.info.object
    s.covariates = [c for c in s.covariates if c != "prio"]  # another design: not its table
    assert not view.body.objects and view.table.value.empty


def test_a_fraction_of_an_unknown_lambda_max_is_a_message(app):
    s = app.store
    s.param.update(penalty="L1", strength_as="fraction")
    app.tabs.active = main.TABS.index("Fit")
    asyncio.run(app.fit.run_bootstrap())
    assert "Cannot bootstrap" in app.fit.status.object or \
        "bootstrap failed" in app.fit.status.object.lower()
    assert "lambda_max" in app.fit.status.object and app.workbench.bootstrap is None
