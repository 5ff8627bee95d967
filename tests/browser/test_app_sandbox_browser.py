"""The query box's refusals, the upload limit, hostile file names and the autosaved analysis
offered after a reload, in headless Chromium (the
helpers and fixtures of test_app_browser: one `panel serve` per test process, with a 1 MB upload
limit and an empty data directory, and a fresh browser context per test)."""

from __future__ import annotations

import re

import pytest
from test_app_browser import (
    MAX_UPLOAD_MB, field, open_app, open_sample, press_until, shot, tab,
)

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.__pwned=1">'


def run_query(pg, sql, outcome):
    """Type ``sql`` in the DuckDB box and press Run query until the page says ``outcome``
    (a pattern)."""
    tab(pg, "Data")
    tab(pg, "DuckDB")
    box = field(pg, "SQL").locator("textarea")
    box.fill(sql)
    box.blur()  # the text area sends its value on change
    press_until(pg, "Run query", pg.get_by_text(re.compile(outcome)).first)


def test_query_box_refusals_are_notifications_and_the_data_stay(page):
    from playwright.sync_api import expect

    pg = page
    run_query(pg, "SELECT * FROM read_text('/etc/hostname')",
              r"DuckDB: refused: the query box reads only")
    run_query(pg, "COPY (SELECT 1) TO '/tmp/survscan_browser.csv'",
              r"only a read-only SELECT .* this is a COPY statement")
    shot(pg, "query_refused")
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()  # the data stayed
    run_query(pg, "SELECT * FROM rossi WHERE age > 30", r"Query returned \d+ rows")


def test_upload_limit_empty_file_and_hostile_names(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "File")
    expect(pg.get_by_text(f"up to {MAX_UPLOAD_MB:g} MB")).to_be_visible()
    upload = pg.locator('input[type="file"]').first
    big = b"time,event\n" + b"1,0\n" * (MAX_UPLOAD_MB * 300_000)
    upload.set_input_files(files=[{"name": "big.csv", "mimeType": "text/csv", "buffer": big}])
    expect(pg.get_by_text("File is too large").first).to_be_visible()
    shot(pg, "upload_too_large")
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()
    pg.reload()  # a fresh dropper (and session) for the next files
    tab(pg, "Data")
    tab(pg, "File")
    upload = pg.locator('input[type="file"]').first
    upload.set_input_files(files=[{"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}])
    expect(pg.get_by_text(re.compile(r"'empty.csv' is empty \(0 bytes\)")).first).to_be_visible()
    # a file whose name and header are HTML: shown as text, never run
    pg.reload()
    tab(pg, "Data")
    tab(pg, "File")
    upload = pg.locator('input[type="file"]').first
    csv = f"time,event,{HOSTILE}\n5,1,40\n6,0,50\n7,1,60\n".encode()
    upload.set_input_files(files=[{"name": f"{HOSTILE}.csv", "mimeType": "text/csv",
                                   "buffer": csv}])
    expect(pg.get_by_text(re.compile(r"Opened .*onerror.*: 3 rows")).first).to_be_visible()
    expect(pg.get_by_text(re.compile(r"file: <img src=x onerror")).first).to_be_visible()
    # the first rows: a light HTML table, then the paged Tabulator when asked for
    expect(pg.locator(".data-glance th", has_text="onerror")).to_have_count(1)
    pg.get_by_role("button", name=re.compile(r"Browse and sort the first \d+ rows")).click()
    expect(pg.locator(".data-preview .tabulator-row")).to_have_count(3)
    expect(pg.locator(".data-preview .tabulator-col", has_text="onerror")).to_have_count(1)
    shot(pg, "hostile_names")
    assert pg.evaluate("window.__pwned") is None


def test_the_last_analysis_is_offered_after_a_reload(page, app_url):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "mgus2")
    # the page loaded again (a new session), once: a reload followed at once by open_app's own
    # navigation raced two page loads (a failed run saw the second page's websocket drop)
    open_app(pg, app_url)
    offer = pg.locator(".restore-offer")
    expect(offer.get_by_text(re.compile(r"Your last analysis: sample: mgus2"))).to_be_visible()
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()  # nothing reopened unasked
    shot(pg, "restore_offer")
    reopen_until(pg, offer, pg.get_by_text("sample: mgus2 —"))
    expect(offer).to_be_hidden()


def reopen_until(pg, offer, outcome, tries=3):
    """Press the offer's "Reopen it" until ``outcome`` is visible, as press_until does for
    other buttons, where a user presses again: in session 24 a fresh-clone run under load saw
    the page's websocket close at the click and the reopen never come (and session 25 one more
    failure of this test in a loaded browser run, its step not recorded).  A press that finds
    the offer busy reopening, or gone, is skipped and the outcome awaited."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import expect

    for _ in range(tries - 1):
        try:
            offer.get_by_role("button", name="Reopen it").click(timeout=10_000)
        except PlaywrightTimeoutError:
            pass
        try:
            expect(outcome).to_be_visible(timeout=20_000)
            return
        except AssertionError:
            pass
    if offer.get_by_role("button", name="Reopen it").is_visible():
        offer.get_by_role("button", name="Reopen it").click()
    expect(outcome).to_be_visible()
