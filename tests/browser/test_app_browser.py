"""The served app in headless Chromium, doing what a user does.

The app is served once per test process and Chromium started once per module (conftest.py,
served_app.py), a fresh browser context per test (its own session). Every test ends by checking that no "Traceback"
reached the page. Screenshots of each main view go to tests/artifacts/ (gitignored). The
helpers here (what a user clicks) serve the other browser modules too.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from served_app import (  # noqa: F401  (re-exported for the other browser modules)
    MAX_UPLOAD_MB, TIMEOUT, assert_no_traceback, open_app,
)

import engine

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
ROSSI = pd.read_csv(Path(__file__).resolve().parents[2] / "sample_data" / "rossi.csv")
ROSSI_FIN_EFRON = -0.3794222  # R coxph, Efron ties (sample_data/README.md)


# ---------------------------------------------------------------------------------------------
# helpers: what a user clicks
def tab(pg, name):
    """Open the tab ``name`` and wait until its header is the active one.  Under load a click
    can land while the server re-lays the page out, beside the header (seen in fresh-clone CI
    runs); the header is then pressed again, at most three times in all."""
    from playwright.sync_api import expect

    header = pg.locator(".bk-tab", has_text=re.compile(rf"^\s*{name}\s*$")).first
    for attempt in range(3):
        header.click()
        try:
            expect(header).to_have_class(re.compile(r"\bbk-active\b"), timeout=15_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def press_until(pg, button, outcome, tries=3):
    """Press the button named ``button`` until ``outcome`` holds: a locator that becomes
    visible, or a function of a timeout (ms) that raises AssertionError until then.  Under load
    the server's re-layout after the previous input can move the button between Playwright's
    stability check and its click, which then lands beside it (seen in fresh-clone CI runs:
    the DuckDB pane just drawn, its text area just sent); a user presses again, and so does
    this, at most ``tries`` times, the last one waiting as long as any action.  For buttons
    whose second press does no harm."""
    from playwright.sync_api import expect

    check = outcome if callable(outcome) else (
        lambda timeout: expect(outcome).to_be_visible(timeout=timeout))
    for _ in range(tries - 1):
        pg.get_by_role("button", name=button, exact=True).click()
        try:
            check(20_000)
            return
        except AssertionError:
            pass
    pg.get_by_role("button", name=button, exact=True).click()
    check(TIMEOUT)


def field(pg, label):
    """The visible input group (label + control) whose label starts with ``label``: the other
    tabs are built too, and may hold a field of the same name."""
    return pg.locator(".bk-input-group", has=pg.locator(
        "label", has_text=re.compile("^" + re.escape(label)))).filter(visible=True).first


def select(pg, label, value):
    field(pg, label).locator("select").select_option(value)


def type_into(pg, label, text):
    box = field(pg, label).locator("input, textarea").first
    box.fill(str(text))
    box.press("Enter")


def row_with(pg, covariate, table=".hr-table"):
    """The row of ``covariate`` in the hazard-ratio table (Results)."""
    return pg.locator(f"{table} .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="covariate"]',
        has_text=re.compile(rf"^\s*{re.escape(covariate)}\s*$")))


def fit(pg, name):
    """Name a fit, press Fit, wait for its own outcome (not an earlier fit's)."""
    from playwright.sync_api import expect

    tab(pg, "Fit")
    type_into(pg, "Fit name", name)
    pg.get_by_role("button", name="Fit", exact=True).click()
    # the Fit tab's status line, or Results' line of the new fit (a new fit opens Results, and
    # only the open tab is in the page)
    done = pg.get_by_text(re.compile(rf"{re.escape(name)}: converged after \d+ iterations")).or_(
        pg.get_by_text(re.compile(rf"^\s*{re.escape(name)} — .*; converged in \d+ iterations")))
    failed = pg.get_by_text(f"Fit failed ({name})")
    expect(done.or_(failed).first).to_be_visible(timeout=TIMEOUT)
    assert failed.count() == 0, failed.first.inner_text()


def open_sample(pg, name):
    tab(pg, "Data")
    tab(pg, "Sample")
    select(pg, "Bundled sample", name)
    press_until(pg, "Open sample", pg.get_by_text(f"sample: {name} —"))


def shot(pg, name):
    """Screenshot with a tall viewport (the template scrolls inside its main area) into
    tests/artifacts/, when SURVSCAN_SCREENSHOTS is set (`make screenshots`): pictures for a
    person to look at, not a check; the resizes and the full-page capture cost about 1.5 s
    each, 42 of them a minute of `make test` on 2 cores."""
    if not os.environ.get("SURVSCAN_SCREENSHOTS"):
        return
    ARTIFACTS.mkdir(exist_ok=True)
    size = pg.viewport_size
    pg.set_viewport_size({"width": 1400, "height": 3000})
    pg.wait_for_timeout(500)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    pg.set_viewport_size(size)
    # the page lays itself out again for the old size: let that settle, or a click that
    # follows may land on a button that is being redrawn and be lost (seen once under load)
    pg.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                "requestAnimationFrame(done)))")
    pg.wait_for_timeout(300)


# ---------------------------------------------------------------------------------------------
def test_rossi_fit_hazard_ratio_and_every_view(page):
    """Load rossi, check the roles, fit (Efron), read fin's HR; screenshot every main view."""
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "rossi")
    expect(field(pg, "Time (or stop)").locator("select")).to_have_value("week")
    expect(field(pg, "Event").locator("select")).to_have_value("arrest")
    expect(pg.get_by_text("events: 114")).to_be_visible()
    shot(pg, "data")
    tab(pg, "Design")
    expect(pg.get_by_text(re.compile(r"Detected device: CPU \(no GPU"))).to_be_visible()
    shot(pg, "design")

    fit(pg, "rossi efron")
    tab(pg, "Fit")
    expect(pg.locator(".tabulator-cell", has_text="rossi efron").first).to_be_visible()
    shot(pg, "fit")
    tab(pg, "Results")
    fin = row_with(pg, "fin")
    expect(fin).to_have_count(1)
    hr = float(fin.locator('.tabulator-cell[tabulator-field="hr"]').inner_text())
    coef = float(fin.locator('.tabulator-cell[tabulator-field="coef"]').inner_text())
    assert coef == pytest.approx(ROSSI_FIN_EFRON, abs=1e-5)
    assert hr == pytest.approx(math.exp(ROSSI_FIN_EFRON), abs=1e-6)  # 0.684257
    expect(pg.locator(".forest-plot .bk-Canvas")).to_be_visible()
    shot(pg, "results")
    tab(pg, "Survival curves")
    expect(pg.locator(".tabulator-cell", has_text=re.compile(r"^\s*at risk\s*$")).first).to_be_visible()
    expect(pg.locator(".km-curves .bk-Canvas").first).to_be_visible()
    pg.get_by_role("button", name="First 30 time units").click()
    expect(pg.get_by_text(re.compile(r"0 \.\. 30(\.0)?$"))).to_be_visible()
    expect(pg.locator(".tabulator-col", has_text=re.compile(r"^\s*25\s*$")).first).to_be_visible()
    shot(pg, "results_curves")

    tab(pg, "Timing")
    pg.get_by_role("button", name="Run timings").click()
    expect(pg.get_by_text(re.compile(r"Timed on sample: rossi"))).to_be_visible(timeout=TIMEOUT)
    expect(pg.get_by_text("engine cpu / ccd")).to_be_visible()
    shot(pg, "timing")
    tab(pg, "Export")
    expect(pg.get_by_text("engine.Cohort.from_frame(").first).to_be_visible()
    with pg.expect_download() as info:
        pg.get_by_role("button", name="Hazard ratios (CSV)").click()
    path = info.value.path()
    assert "fin" in Path(path).read_text()
    shot(pg, "export")


def test_stanford_heart_start_stop_fit(page):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "stanford_heart")
    expect(field(pg, "Start (entry").locator("select")).to_have_value("start")
    expect(pg.get_by_text("subjects: 103")).to_be_visible()
    fit(pg, "heart start-stop")
    tab(pg, "Results")
    expect(row_with(pg, "transplant")).to_have_count(1)
    expect(pg.get_by_text(re.compile(r"n = 172, events = 75"))).to_be_visible()


def test_cut_point_gives_two_coefficients(page):
    from playwright.sync_api import expect

    pg = page
    fit(pg, "no cut")
    tab(pg, "Design")
    select(pg, "Covariate with a time-varying effect", "fin")
    type_into(pg, "Cut points", "10")
    press_until(pg, "Add cut points", pg.get_by_text("fin[10,inf)").first)
    fit(pg, "fin cut at 10")
    tab(pg, "Results")
    expect(row_with(pg, "fin[0,10)")).to_have_count(1)
    expect(row_with(pg, "fin[10,inf)")).to_have_count(1)
    expect(row_with(pg, "fin")).to_have_count(0)
    # the time-varying fit's concordance, counted on its episodes
    expect(pg.locator(".fit-tests")).to_contain_text("Concordance (Harrell's C) = 0.6")
    # its PH check: fin before and after week 10 are terms of their own (R's cox.zph of the
    # survSplit fit; tests/engine/inference/test_ph_test_cut_points.py)
    tab(pg, "Proportional hazards")
    expected = engine.ph_test(engine.fit(engine.Cohort.from_frame(
        ROSSI, "week", "arrest", covariates=["fin", "age", "race", "wexp", "mar", "paro",
                                              "prio"]), ties="efron",
        cut_points={"fin": [10]})).table
    info_ = pg.locator(".ph-info")
    expect(info_).to_contain_text("a term of its own")
    chisq = re.search(r"chi-square = ([\d.]+) on 8 df",
                      info_.locator("p").first.text_content()).group(1)
    assert float(chisq) == pytest.approx(expected.loc["GLOBAL", "chisq"], abs=0.005)
    late = pg.locator(".ph-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="term"]', has_text="fin[10,inf)"))
    expect(late.locator('.tabulator-cell[tabulator-field="chisq"]')).to_have_text(
        f"{expected.loc['fin[10,inf)', 'chisq']:.4f}")
    shot(pg, "results_ph_cut_points")
    # its residuals, per subject (the episodes summed, as R's collapse=): the form of age and
    # the rows that move fin after week 10 most (engine.residuals against R in
    # tests/engine/inference/test_residuals_cut_points.py)
    tab(pg, "Residuals")
    select(pg, "Functional form of", "age")
    select(pg, "Influence on", "fin[10,inf)")
    cut_fit = engine.fit(engine.Cohort.from_frame(
        ROSSI, "week", "arrest", covariates=["fin", "age", "race", "wexp", "mar", "paro",
                                              "prio"]), ties="efron", cut_points={"fin": [10]})
    dfbeta = engine.residuals(cut_fit, "dfbeta", columns=["fin[10,inf)"])["fin[10,inf)"]
    largest = dfbeta.abs().idxmax()
    pg.get_by_role("button", name="Show residuals").click()
    first = pg.locator(".residuals-influence .tabulator-row").first
    expect(first.locator('[tabulator-field="row"]')).to_have_text(str(largest + 1))
    expect(first.locator('[tabulator-field="dfbeta / SE"]')).to_have_text(
        f"{dfbeta[largest] / cut_fit.se['fin[10,inf)']:.4f}")
    expect(pg.locator(".residuals-figure img")).to_be_visible()
    expect(pg.locator(".residuals-status")).to_contain_text("432 rows")
    expect(pg.locator(".term-note")).to_contain_text("cut points")     # no term plot: why
    shot(pg, "results_residuals")
    # both fits side by side in the comparison tables
    tab(pg, "Kept fits")
    compare = pg.locator(".compare-hr-table")
    compare.scroll_into_view_if_needed()  # where a user reads it
    expect(compare.locator(".tabulator-col", has_text="no cut")).to_have_count(1)
    expect(compare.locator(".tabulator-col", has_text="fin cut at 10")).to_have_count(1)
    expect(row_with(pg, "fin[10,inf)", table=".compare-hr-table")).to_have_count(1)
    # the cut-point fit nests the plain one: their likelihood-ratio test, 1 df
    lr = pg.locator(".lr-tests .tabulator-row")
    expect(lr).to_have_count(1)
    expect(lr.locator('[tabulator-field="smaller fit"]')).to_have_text("no cut")
    expect(lr.locator('[tabulator-field="larger fit"]')).to_have_text("fin cut at 10")
    expect(lr.locator('[tabulator-field="df"]')).to_have_text("1")
    shot(pg, "results_comparison")


def test_fine_gray_on_competing_risks(page):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "bmtcrr")
    tab(pg, "Design")
    select(pg, "Model", "fine_gray")
    expect(pg.get_by_text("Fine-Gray uses Breslow ties")).to_be_visible()
    tab(pg, "Data")
    expect(pg.get_by_text(re.compile(r"by cause: 1: 56, 2: 75"))).to_be_visible()
    fit(pg, "relapse (Fine-Gray)")
    tab(pg, "Results")
    expect(row_with(pg, "Source[PB]")).to_have_count(1)
    expect(pg.get_by_text(re.compile(r"n = 177, events = 56"))).to_be_visible()
    tab(pg, "Survival curves")
    expect(pg.get_by_text("Cumulative incidence (competing risks)")).to_be_visible()
    shot(pg, "results_fine_gray")


def test_poisson_rates_on_rossi(page):
    """Poisson regression of the arrests over the weeks followed: the incidence rate ratios
    on the page (statsmodels' GLM with log weeks as the offset: fin 0.6933, age 0.9459;
    tests/app/survival/test_app_poisson.py checks every digit), then with follow-up split
    at weeks 20 and 40, a baseline rate per band (the GLM on survSplit rows)."""
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "rossi")
    tab(pg, "Design")
    select(pg, "Model", "poisson")
    expect(pg.get_by_text(re.compile("Poisson regression has no ties"))).to_be_visible()
    fit(pg, "arrest rates (Poisson)")
    tab(pg, "Results")
    expect(pg.get_by_text("Incidence rate ratios (Poisson)")).to_be_visible()
    expect(row_with(pg, "(intercept)")).to_have_count(1)
    expect(row_with(pg, "fin").locator('[tabulator-field="IRR"]')).to_have_text(
        re.compile(r"^\s*0\.6933"))
    # a baseline rate per follow-up band (piecewise exponential): week 40 on, IRR 1.62567
    tab(pg, "Design")
    type_into(pg, "Baseline rate changes at", "20, 40")
    fit(pg, "arrest rates in bands")
    tab(pg, "Results")
    expect(row_with(pg, "follow-up > 40").locator('[tabulator-field="IRR"]')).to_have_text(
        re.compile(r"^\s*1\.62567"))
    shot(pg, "results_poisson")
    # the adjusted rates by fin (the g-formula for rates: engine.adjusted_rates)
    tab(pg, "Adjusted curves")
    pg.get_by_role("button", name="Compute adjusted rates").click()
    expect(pg.locator(".adjusted-table .tabulator-cell",
                      has_text=re.compile(r"^\s*-2\.1424\s*$"))).to_have_count(1)  # per 1,000
    expect(pg.locator(".adjusted-rates-table .tabulator-cell",
                      has_text=re.compile(r"^\s*4\.7139\s*$"))).to_have_count(1)   # fin = 1
    shot(pg, "results_poisson_adjusted_rates")


def test_malformed_csv_is_a_message_and_the_app_stays_usable(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "File")
    upload = pg.locator('input[type="file"]').first
    upload.set_input_files(files=[{"name": "broken.csv", "mimeType": "text/csv",
                                   "buffer": b'week,arrest\n1,0\n2,1,5,6,7\n"open quote\n'}])
    expect(pg.get_by_text(re.compile(r"could not read 'broken.csv'")).first).to_be_visible()
    expect(pg.get_by_text("sample: rossi —")).to_be_visible()  # the data stayed
    # a readable file with text in the time column: the engine's message in the report
    upload.set_input_files(files=[{"name": "texty.csv", "mimeType": "text/csv",
                                   "buffer": b"time,event,age\n5,1,40\nsoon,0,50\n7,1,60\n"}])
    expect(pg.get_by_text("Not ready:")).to_be_visible()
    expect(pg.get_by_text(re.compile(r"column 'time'.*not a number")).first).to_be_visible()
    tab(pg, "Fit")
    pg.get_by_role("button", name="Fit", exact=True).click()
    expect(pg.get_by_text("Fit failed").first).to_be_visible()
    shot(pg, "bad_input")
    open_sample(pg, "rossi")  # still usable
    fit(pg, "after the bad file")


def test_long_fit_can_be_cancelled(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "Simulate")
    type_into(pg, "N (rows)", 200_000)
    type_into(pg, "P (covariates)", 500)
    pg.get_by_role("button", name="Simulate cohort").click()
    expect(pg.get_by_text("simulated N=200,000 P=500 —")).to_be_visible(timeout=TIMEOUT)
    tab(pg, "Design")
    select(pg, "Solver", "ccd")
    tab(pg, "Fit")
    pg.get_by_role("button", name="Fit", exact=True).click()
    expect(pg.get_by_text(re.compile(r"iteration [1-9]"))).to_be_visible(timeout=TIMEOUT)
    shot(pg, "fit_running")
    # Cancel at once: a fit of 15-20 s under load ended before a Cancel pressed after two
    # tab switches (each up to 15 s while the fit thread holds the server), and was kept
    pg.get_by_role("button", name="Cancel").click()
    tab(pg, "Data")  # the page stays usable while the fit stops
    tab(pg, "Fit")
    expect(pg.get_by_text(re.compile(r"cancelled after \d+ iteration"))).to_be_visible()
    assert pg.get_by_role("button", name="Fit", exact=True).is_enabled()


def test_two_sessions_do_not_share_data(browser, app_url):
    from playwright.sync_api import expect

    contexts = [browser.new_context(viewport={"width": 1400, "height": 1200}) for _ in range(2)]
    try:
        a, b = (c.new_page() for c in contexts)
        for pg in (a, b):
            pg.set_default_timeout(TIMEOUT)
            open_app(pg, app_url)
        open_sample(a, "stanford_heart")
        fit(a, "only in A")
        b.reload()
        open_app(b, app_url)
        expect(b.get_by_text("sample: rossi —")).to_be_visible()
        tab(b, "Fit")
        expect(b.get_by_text("only in A")).to_have_count(0)
        expect(b.get_by_text("Kept fits: 0")).to_be_visible()
        tab(a, "Data")
        expect(a.get_by_text("sample: stanford_heart —")).to_be_visible()
        for pg in (a, b):
            assert_no_traceback(pg)
    finally:
        for c in contexts:
            c.close()
