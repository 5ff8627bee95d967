"""The OMOP study tab and the cross-validation action in headless Chromium (the helpers and
fixtures of test_app_browser: one `panel serve` per test process, a fresh context per test)."""

from __future__ import annotations

import re

import pytest
from eunomia_study import CELECOXIB, STRATIFIED, default_study
from test_app_browser import (
    field, shot, tab, type_into,
)

import engine

pytestmark = pytest.mark.browser

ROSSI_COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


def test_eunomia_study_with_defaults(page):
    from playwright.sync_api import expect

    hr = default_study().hazard_ratios.set_index("analysis").loc[STRATIFIED, "hr"]

    pg = page
    tab(pg, "OMOP study")
    expect(field(pg, "Target concept id").locator("input")).to_have_value(str(CELECOXIB))
    expect(pg.get_by_text(re.compile(r"celecoxib \(1118084\)")).first).to_be_visible()
    pg.get_by_role("button", name="Run study").click()
    expect(pg.get_by_text(re.compile(r"^Study (done in|failed)"))).to_be_visible()
    assert pg.get_by_text("Study failed").count() == 0
    row = pg.locator(".omop-hr-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="analysis"]', has_text="PS stratified (5 strata)"))
    expect(row).to_have_count(1)
    shown = row.locator('.tabulator-cell[tabulator-field="hr"]').inner_text()
    assert float(shown) == pytest.approx(round(hr, 4), abs=1e-12)  # 0.9824
    assert round(hr, 3) == 0.982
    expect(pg.get_by_text("Matched on propensity score (1:1, caliper 0.2 SD logit)")).to_be_visible()
    expect(pg.get_by_text("Preference score by arm")).to_have_count(0)  # titles are canvas text
    assert pg.locator(".bk-Canvas").count() >= 4  # preference, balance, two KM plots
    shot(pg, "omop")
    tab(pg, "Results")  # the stratified fit joined the kept fits
    tab(pg, "Kept fits")
    expect(pg.locator(".tabulator-cell", has_text="OMOP: PS-stratified").first).to_be_visible()


def test_cross_validation_on_rossi(page, rossi):
    from playwright.sync_api import expect

    cohort = engine.Cohort.from_frame(rossi, time="week", event="arrest",
                                      covariates=ROSSI_COVARIATES)
    chosen = engine.cross_validate(cohort, penalty="l1", folds=3, grid=4, seed=0,
                                   ties="efron").penalty.lam

    pg = page
    tab(pg, "Design")
    pg.get_by_role("button", name="L1", exact=True).click()
    tab(pg, "Fit")
    type_into(pg, "CV folds", 3)
    type_into(pg, "Lambda grid points", 4)
    pg.get_by_role("button", name="Cross-validate penalty").click()
    info = pg.locator(".cv-info")
    expect(info).to_contain_text(f"chosen lambda = {chosen:.4g}")  # the app opened Results
    expect(pg.get_by_text("◀ chosen")).to_have_count(1)
    assert pg.get_by_text("Cross-validation of the penalty").count() == 1
    shot(pg, "cv")
