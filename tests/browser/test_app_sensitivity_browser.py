"""The served app in headless Chromium: the Sensitivity tab on rossi. Subgroups by race
(three), the default adjustment sets (eight): 24 variants announced with engine's estimate of
their time; a strata design by wexp ticked and an end of follow-up at 26 typed: 96 variants;
run, the specification curve and the forest of each axis drawn, the hazard ratio of fin with
all covariates and everyone equal to engine.fit's and the variant stratified by wexp equal to
engine.fit of the same stratified cohort.  Screenshot in tests/artifacts/sensitivity.png."""

from __future__ import annotations

import re

import pytest

import engine
from test_app_browser import (
    field, shot, tab, type_into,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


def test_sensitivity_grid_on_rossi(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Sensitivity")
    field(pg, "Subgroups by").locator("select").select_option(label="race")
    expect(pg.get_by_text(re.compile(r"24 variants.*engine's estimate: about"))).to_be_visible()
    pg.get_by_label("by wexp").check()
    type_into(pg, "End follow-up at", "26")
    expect(pg.get_by_text(re.compile(
        r"96 variants .*\(8 covariates x 3 subgroup x 2 strata x 2 follow_up\)"))).to_be_visible()
    pg.get_by_role("button", name="Run the variants").click()
    expect(pg.get_by_text(re.compile(r"96 variants in [\d.]+ s"))).to_be_visible()
    expect(pg.get_by_text("Each axis varied alone").first).to_be_visible()
    rossi = engine.datasets.load_rossi()
    want = engine.fit(engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                               covariates=COVARIATES), ties="efron")
    first = pg.locator(".sensitivity-table .tabulator-row").first   # variant 0: all, everyone
    expect(first).to_contain_text(f"{want.summary.loc['fin', 'hr']:.4f}")
    stratified = engine.fit(engine.Cohort.from_frame(
        rossi.drop(columns="wexp").assign(w=rossi["wexp"]), time="week", event="arrest",
        covariates=[c for c in COVARIATES if c != "wexp"], strata=["w"]), ties="efron")
    hr = f"{stratified.summary.loc['fin', 'hr']:.4f}"
    # variant 16 (page 2's first by wexp): all covariates, everyone, by wexp, the whole
    # follow-up (wexp, also a covariate, is constant within its strata: aliased, the same fit
    # as without it)
    shot(pg, "sensitivity")
    pg.get_by_role("button", name="Show Page 2").click()
    cell = pg.locator(".sensitivity-table .tabulator-row", has_text="by wexp").first
    expect(cell).to_contain_text(hr)
