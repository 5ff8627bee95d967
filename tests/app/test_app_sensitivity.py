"""The Sensitivity tab (app/views/sensitivity.py): the variants it offers from the current
analysis, their count before running, the study run as a job, its table equal to
engine.sensitivity_study's (whose variants equal their own engine.fit: tests/engine/sensitivity)
and a variant refitted here; a design it cannot study is a message."""

from __future__ import annotations

import asyncio

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
    assert view.last_outcome == "done", view.status.object
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
    asyncio.run(view.run_study())
    assert view.last_outcome == "failed" and view.result is None
