"""The served app in headless Chromium: the Sensitivity tab on rossi. Subgroups by race
(three), the default adjustment sets (eight): 24 variants announced, run, the specification
curve drawn and the hazard ratio of fin with all covariates and everyone equal to engine.fit's.
Screenshot in tests/artifacts/sensitivity.png."""

from __future__ import annotations

import re

import pytest

import engine
from test_app_browser import (  # noqa: F401  (fixtures)
    app_url, browser, chromium, field, page, shot, tab)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_sensitivity_grid_on_rossi(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Sensitivity")
    field(pg, "Subgroups by").locator("select").select_option(label="race")
    expect(pg.get_by_text(re.compile(r"24 variants"))).to_be_visible()
    pg.get_by_role("button", name="Run the variants").click()
    expect(pg.get_by_text(re.compile(r"24 variants in [\d.]+ s"))).to_be_visible()
    expect(pg.get_by_text(re.compile(r"Specification curve: 24 variants")).or_(
        pg.locator(".bk-Canvas")).first).to_be_visible()
    want = engine.fit(engine.Cohort.from_frame(
        engine.datasets.load_rossi(), time="week", event="arrest",
        covariates=["fin", "age", "race", "wexp", "mar", "paro", "prio"]), ties="efron")
    first = pg.locator(".sensitivity-table .tabulator-row").first   # variant 0: all, everyone
    expect(first).to_contain_text(f"{want.summary.loc['fin', 'hr']:.4f}")
    shot(pg, "sensitivity")
