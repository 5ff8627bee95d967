"""Named analyses, the .survscan file and many users at once, in headless Chromium (the helpers
and fixtures of test_app_browser: one `panel serve` per test process, a fresh context per test)."""

from __future__ import annotations

import re

import pytest
from test_app_browser import (
    TIMEOUT, assert_no_traceback, fit, open_sample, shot, tab,
)

pytestmark = pytest.mark.browser


def coefficients(pg) -> dict:
    """The Results tab's coef column as shown: {covariate: text}."""
    from playwright.sync_api import expect

    tab(pg, "Results")
    rows = pg.locator(".hr-table .tabulator-row")
    expect(rows.first).to_be_visible()
    return {rows.nth(k).locator('[tabulator-field="covariate"]').inner_text().strip():
            rows.nth(k).locator('[tabulator-field="coef"]').inner_text().strip()
            for k in range(rows.count())}


def test_save_switch_download_and_reopen_an_analysis(page, tmp_path):
    from playwright.sync_api import expect

    pg = page
    box = pg.locator(".analyses-box")
    fit(pg, "efron")
    before = coefficients(pg)
    assert before["fin"] == "-0.379422"  # R coxph, Efron ties
    box.get_by_placeholder("a name, e.g. rossi by fin").fill("rossi by fin")
    box.get_by_role("button", name="Save as").click()
    expect(box.get_by_text("Analysis: rossi by fin")).to_be_visible()
    with pg.expect_download() as info:
        box.get_by_role("button", name="Download .survscan").click()
    saved = tmp_path / "rossi_by_fin.survscan"
    info.value.save_as(saved)
    assert info.value.suggested_filename == "rossi_by_fin.survscan"

    open_sample(pg, "mgus2")  # a second analysis
    box.get_by_placeholder("a name, e.g. rossi by fin").fill("mgus")
    box.get_by_role("button", name="Save as").click()
    expect(box.get_by_text("Analysis: mgus")).to_be_visible()
    expect(box.locator("select")).to_have_value("mgus")  # the server's choices arrived
    expect(pg.get_by_text("Kept fits: 1")).to_be_visible()  # the rossi fit is still kept
    box.locator("select").select_option("rossi by fin")
    expect(box.locator("select")).to_have_value("rossi by fin")
    box.get_by_role("button", name="Switch to it").click()
    expect(box.get_by_text("Analysis: rossi by fin")).to_be_visible()
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()  # the Data tab
    expect(pg.get_by_text(re.compile(r"Data: sample: rossi\s+432 rows"))).to_be_visible()
    shot(pg, "analyses_switched")

    tab(pg, "Export")
    opened = pg.get_by_text(re.compile(r"Opened rossi by fin \((\d)\): sample: rossi, 1 kept "
                                       r"fit")).first
    drop_until(pg, saved, opened)
    number = re.search(r"\((\d)\)", opened.text_content()).group(1)
    expect(box.get_by_text(f"Analysis: rossi by fin ({number})")).to_be_visible()
    assert coefficients(pg) == before  # refitted: the same numbers
    shot(pg, "analysis_reopened")


def drop_until(pg, path, outcome, tries=2):
    """Drop the analysis file on the Export tab's opener until ``outcome`` is visible, as
    press_until does for buttons: in session 27 one fresh-clone run of six, under load, never
    saw the first drop reopened (120 s; the cause not recorded), where a user drops the file
    again.  A second drop that lands beside a slow first one opens the
    analysis twice, (2) and (3): the caller reads the number."""
    from playwright.sync_api import expect

    for _ in range(tries - 1):
        pg.locator('.analysis-files input[type="file"]').set_input_files(str(path))
        try:
            expect(outcome).to_be_visible(timeout=30_000)
            return
        except AssertionError:
            pass
    pg.locator('.analysis-files input[type="file"]').set_input_files(str(path))
    expect(outcome).to_be_visible(timeout=TIMEOUT)


def test_a_file_that_is_not_an_analysis_is_a_message(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Export")
    pg.locator('.analysis-files input[type="file"]').set_input_files(files=[{
        "name": "notes.survscan", "mimeType": "application/zip", "buffer": b"not a zip"}])
    expect(pg.get_by_text(re.compile(r"Cannot open notes.survscan: 'notes.survscan' is not a "
                                     r"survscan analysis file")).first).to_be_visible()
    tab(pg, "Data")                                  # the loaded data is still there
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()


@pytest.mark.slow
def test_users_at_once_each_get_a_lone_fits_numbers(browser, app_url):
    """Three sessions open the page together and fit rossi together: all finish, each shows
    the numbers of a lone fit and only its own fit.  Three are more users than the test
    server's two job slots; how long many users wait is measured by `python -m bench serve`
    (six arriving together), not here."""
    from playwright.sync_api import expect

    from app.data.store import Store
    from app.survival.state import Workbench

    s = Store()
    bench = Workbench(store=s)
    s.load_sample("rossi")
    lone = {k: f"{v:.6f}" for k, v in bench.fit_job().run().summary["coef"].items()}
    users = 3
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1200})
                for _ in range(users)]
    try:
        pages = [c.new_page() for c in contexts]
        for pg in pages:
            pg.set_default_timeout(TIMEOUT * 3)
            pg.goto(app_url, wait_until="commit")  # all arrive before any page is ready
        for pg in pages:
            expect(pg.get_by_text("Ready to fit.")).to_be_visible(timeout=TIMEOUT * 3)
        for k, pg in enumerate(pages):  # every Fit pressed before any result is awaited
            tab(pg, "Fit")
            box = pg.locator(".bk-input-group", has=pg.locator(
                "label", has_text=re.compile("^Fit name"))).first.locator("input")
            box.fill(f"user {k + 1}")
            box.press("Enter")
            pg.get_by_role("button", name="Fit", exact=True).click()
        for k, pg in enumerate(pages):   # a new fit opens Results, its line names the fit
            expect(pg.get_by_text(re.compile(rf"^\s*user {k + 1} — .*; converged in \d+ "
                                             r"iterations")).first).to_be_visible(
                timeout=TIMEOUT * 3)
        for k, pg in enumerate(pages):
            assert coefficients(pg) == lone
            expect(pg.get_by_text("Kept fits: 1")).to_be_visible()
            tab(pg, "Fit")
            others = [f"user {j + 1}" for j in range(users) if j != k]
            assert all(pg.locator(".tabulator-cell", has_text=re.compile(rf"^\s*{o}\s*$"))
                       .count() == 0 for o in others)
            assert_no_traceback(pg)
    finally:
        for c in contexts:
            c.close()
