"""Switching named analyses in headless Chromium: the OMOP tab shows the study of the analysis
switched to (or none), the Data tab's sample picker its sample; and the Timing tab names a
failing lifelines fit (the helpers and fixtures of test_app_browser: one `panel serve` per
module, a fresh context per test)."""

from __future__ import annotations

import re

import pytest
from eunomia_study import STRATIFIED, default_study
from test_app_browser import (
    field, open_sample, press_until, shot, tab, type_into,
)

pytestmark = pytest.mark.browser



def switch_to(pg, name):
    from playwright.sync_api import expect

    box = pg.locator(".analyses-box")
    box.locator("select").select_option(name)
    expect(box.locator("select")).to_have_value(name)
    box.get_by_role("button", name="Switch to it").click()
    expect(box.get_by_text(f"Analysis: {name}", exact=True)).to_be_visible()


def save_as(pg, name):
    from playwright.sync_api import expect

    box = pg.locator(".analyses-box")
    box.get_by_placeholder("a name, e.g. rossi by fin").fill(name)
    box.get_by_role("button", name="Save as").click()
    expect(box.get_by_text(f"Analysis: {name}", exact=True)).to_be_visible()
    expect(box.locator("select")).to_have_value(name)


def shown_sample(pg):
    tab(pg, "Data")
    tab(pg, "Sample")
    return field(pg, "Bundled sample").locator("select")


def test_switching_analyses_shows_each_ones_study_and_sample(page):
    from playwright.sync_api import expect

    hr = default_study().hazard_ratios.set_index("analysis").loc[STRATIFIED, "hr"]

    pg = page
    open_sample(pg, "mgus2")
    save_as(pg, "mgus")                                  # an analysis without a study
    open_sample(pg, "rossi")
    tab(pg, "OMOP study")
    pg.get_by_role("button", name="Run study").click()
    expect(pg.get_by_text(re.compile(r"^Study (done in|failed)"))).to_be_visible()
    failed = pg.get_by_text("Study failed")
    assert failed.count() == 0, failed.all_inner_texts()
    save_as(pg, "study")

    switch_to(pg, "mgus")
    expect(shown_sample(pg)).to_have_value("mgus2")
    tab(pg, "OMOP study")
    expect(pg.get_by_text("No study yet: press Run study.")).to_be_visible()
    expect(pg.locator(".omop-hr-table")).to_be_hidden()
    shot(pg, "restore_no_study")

    switch_to(pg, "study")
    expect(shown_sample(pg)).to_have_value("rossi")
    tab(pg, "OMOP study")
    expect(pg.get_by_text(re.compile(r"^The study of this analysis"))).to_be_visible()
    row = pg.locator(".omop-hr-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="analysis"]', has_text=STRATIFIED))
    expect(row).to_have_count(1)
    shown = row.locator('.tabulator-cell[tabulator-field="hr"]').inner_text()
    assert float(shown) == pytest.approx(round(hr, 4), abs=1e-12)  # 0.9824
    shot(pg, "restore_study")


def test_timing_names_a_failing_lifelines_fit(page, rossi):
    """age2 = 2 age: the engine fits (the collinear column named), lifelines stops on a singular
    matrix; the Timing tab says so in its table and under the scaling chart."""
    from lifelines import CoxPHFitter
    from playwright.sync_api import expect

    with pytest.raises(Exception) as info:
        CoxPHFitter().fit(rossi.assign(age2=2 * rossi["age"]), duration_col="week",
                          event_col="arrest")
    reason = f"{type(info.value).__name__}: {str(info.value).splitlines()[0][:60]}"
    assert reason.startswith("ConvergenceError: Convergence halted")

    pg = page
    tab(pg, "Data")
    tab(pg, "DuckDB")
    box = field(pg, "SQL").locator("textarea")
    box.fill("SELECT *, 2 * age AS age2 FROM rossi")
    box.blur()  # the text area sends its value on change
    press_until(pg, "Run query", pg.get_by_text("DuckDB: samples —"))
    tab(pg, "Timing")
    type_into(pg, "Rows used", 300)
    pg.get_by_role("button", name="Run timings").click()
    expect(pg.get_by_text(re.compile(r"Timed on DuckDB: samples"))).to_be_visible()
    cell = pg.locator('.tabulator-cell[tabulator-field="note"]', has_text=f"failed: {reason}")
    expect(cell).to_have_count(1)  # the lifelines row of the timings table
    expect(pg.get_by_text("Not on the scaling chart:")).to_be_visible()
    for n in (250, 300):
        expect(pg.locator("li", has_text=f"lifelines fit at N = {n}: failed: {reason}")
               ).to_have_count(1)
    shot(pg, "timing_lifelines_failed")
