"""The OMOP tab's two CohortMethod rules: the checkboxes reach engine.cdm.run_study, and the
attrition shown is the engine's, with a row per rule."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

pytest.importorskip("panel")

from app import main  # noqa: E402


@pytest.fixture
def app():
    import panel as pn

    yield main.build_app()
    pn.state.reset()


@pytest.mark.slow
def test_common_period_and_new_window_checkboxes_run_the_engines_rules(app):
    from engine.cdm import new_user_cohort, open_eunomia

    common, censor = app.omop.rules
    common.value = censor.value = True
    assert app.omop_state.settings()["restrict_to_common_period"] is True
    asyncio.run(app.omop.run_study())
    assert app.omop.runner.last_outcome == "done", app.omop.status.object
    con = open_eunomia()
    try:
        expected = new_user_cohort(con, 1118084, 1124300, 192671, prior_observation=183,
                                   risk_window_end=30, restrict_to_common_period=True,
                                   censor_at_new_risk_window=True).attrs["attrition"]
    finally:
        con.close()
    shown = app.omop.attrition.value
    pd.testing.assert_frame_equal(shown.iloc[:-1], expected)      # the last row: matching
    rules = shown.set_index("rule")
    assert rules.loc["Restrict to common period"].tolist() == [1841, 849]
    assert "Censoring at start of new time-at-risk" in rules.index
