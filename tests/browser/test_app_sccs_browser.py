"""The SCCS tab in headless Chromium (the helpers and fixtures of test_app_browser: one
`panel serve` per test process, a fresh context per test): open R SCCS's itpdat, choose MMR with a
0-42 day risk window and age groups, fit, and read the IRR on the page."""

from __future__ import annotations

import re

import pytest
from test_app_browser import (
    field, press_until, shot, tab, type_into,
)

import engine

pytestmark = pytest.mark.browser

AGE_CUTS = [427, 488, 549, 610, 671]


def irr_cell(pg, covariate):
    row = pg.locator(".sccs-irr-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="covariate"]',
        has_text=re.compile(rf"^\s*{re.escape(covariate)}\s*$")))
    return row.locator('.tabulator-cell[tabulator-field="irr"]')


def press_fit(pg):
    """Press Fit SCCS until the status line leaves what it said before (the fit started).
    A press while a fit runs is ignored by the page, so pressing again (press_until) cannot
    start a second fit."""
    from playwright.sync_api import expect

    status = pg.locator(".sccs-status")
    before = status.inner_text()
    press_until(pg, "Fit SCCS",
                lambda timeout: expect(status).not_to_have_text(before, timeout=timeout))
    return status


def test_itpdat_mmr_risk_window_and_age_groups(page):
    from playwright.sync_api import expect

    sccs = engine.SccsData.from_cases(
        engine.datasets.load_sccs("itpdat"), case="case", obs_start="sta", obs_end="end",
        event_times="itp", exposure_start=["mmr"], risk_windows={"mmr": [(0, 42)]},
        age_cuts=AGE_CUTS)
    expected = engine.fit(sccs, model="sccs").summary.loc["mmr[0,42]", "irr"]

    pg = page
    tab(pg, "SCCS")
    field(pg, "Bundled R SCCS dataset").locator("select").select_option("itpdat")
    pg.get_by_role("button", name="Open dataset").click()
    expect(pg.get_by_text(re.compile(r"R SCCS: itpdat — 44 rows"))).to_be_visible()
    expect(field(pg, "Event day").locator("select")).to_have_value("itp")
    type_into(pg, "Risk windows", "mmr: 0..42")
    type_into(pg, "Age group cut points", ", ".join(map(str, AGE_CUTS)))
    status = press_fit(pg)
    expect(status).to_have_text(re.compile(r"SCCS fit (done:|failed)"))
    assert "failed" not in status.inner_text()
    cell = irr_cell(pg, "mmr[0,42]")
    expect(cell).to_have_count(1)
    assert float(cell.inner_text()) == pytest.approx(round(expected, 4), abs=1e-12)  # 3.2262
    expect(irr_cell(pg, "age[671,inf)")).to_have_count(1)
    expect(pg.get_by_text("35 cases, 44 events, 264 eras", exact=False)).to_be_visible()
    assert pg.locator(".bk-Canvas").count() >= 1          # the forest plot
    shot(pg, "sccs")
    tab(pg, "Downloads and script")
    expect(pg.get_by_text("engine.SccsData.from_cases(").first).to_be_visible()
    tab(pg, "Incidence-rate ratios")

    type_into(pg, "Risk windows", "mmr: 0-42")            # a typo: a message, results stay
    press_fit(pg)
    expect(status).to_have_text(re.compile(r"Cannot fit: .*start\.\.end"))
    expect(irr_cell(pg, "mmr[0,42]")).to_have_count(1)


def test_eunomia_study_with_diagnostics(page):
    from playwright.sync_api import expect

    con = engine.cdm.open_eunomia()
    try:  # the page's defaults: risk window 0..30, pre-exposure window -30..-1, probe 30 days
        with pytest.warns(engine.MonotoneLikelihoodWarning, match=r"exposure\[-30,-1\]"):
            study = engine.cdm.sccs_study(con, exposure=1124300, outcome=192671,
                                          risk_window=(0, 30), pre_window=(-30, -1))
    finally:
        con.close()
    expected = study.irr.loc[0, "irr"]

    pg = page
    tab(pg, "SCCS")
    tab(pg, "Eunomia CDM")
    pg.get_by_role("button", name="Use the Eunomia CDM").click()
    expect(field(pg, "Exposure concept id").locator("input")).to_have_value("1124300")
    status = press_fit(pg)
    expect(status).to_have_text(re.compile(r"SCCS fit (done:|failed)"))
    assert "failed" not in status.inner_text()
    cell = irr_cell(pg, "exposure[0,30]")
    expect(cell).to_have_count(1)
    assert float(cell.inner_text()) == pytest.approx(round(expected, 4), abs=1e-12)
    expect(pg.get_by_text("Cases with an exposure era").first).to_be_visible()
    expect(pg.locator(".bk-Canvas").first).to_be_attached()    # the forest plot
    shot(pg, "sccs_eunomia")
    tab(pg, "Diagnostics")
    expect(pg.locator(".bk-Canvas").nth(2)).to_be_attached()   # diagnostics forest, histogram,
    shot(pg, "sccs_eunomia_diagnostics")                       # observed / expected by month


def test_simulated_drugs_l1_bootstrap_and_cancel(page):
    """Many drugs: the L1 fit with bootstrap selection frequencies in the table; a long run
    (100,000 cases, 2,000 replicates) is cancelled."""
    from playwright.sync_api import expect

    sccs = engine.simulate_sccs(500, 10, seed=3)
    boot = engine.bootstrap(sccs, model="sccs", penalty=engine.L1(5.0), replicates=5, seed=0)
    expected = boot.summary["nonzero_fraction"]

    pg = page
    tab(pg, "SCCS")
    tab(pg, "Simulated drugs")
    type_into(pg, "Cases", 500)
    type_into(pg, "Drugs", 10)
    type_into(pg, "Seed", 3)
    pg.get_by_role("button", name="Simulate").click()
    expect(pg.get_by_text("simulated: 500 cases, 10 drugs (seed 3)")).to_be_visible()
    type_into(pg, "Bootstrap replicates", 5)
    status = press_fit(pg)
    expect(status).to_have_text(re.compile(r"SCCS fit (done:|failed)"))
    for drug in ("drug0", "drug9"):
        row = pg.locator(".sccs-irr-table .tabulator-row", has=pg.locator(
            '.tabulator-cell[tabulator-field="covariate"]', has_text=re.compile(
                rf"^\s*{drug}\s*$")))
        shown = row.locator('.tabulator-cell[tabulator-field="selected"]').inner_text()
        assert float(shown) == pytest.approx(expected[drug], abs=1e-12)
    shot(pg, "sccs_simulated")

    type_into(pg, "Cases", 100_000)
    type_into(pg, "Drugs", 500)
    pg.get_by_role("button", name="Simulate").click()
    type_into(pg, "Bootstrap replicates", 2000)
    press_fit(pg)
    expect(status).to_have_text(re.compile(r"SCCS: "))
    pg.get_by_role("button", name="Cancel").click()
    expect(status).to_have_text(re.compile(r"SCCS fit cancelled"))
