"""Issue 29's state defects in headless Chromium, each done as the user did it and read from the
page: the Kaplan-Meier plot after the first fit, the Event column of an upload, Fine-Gray after
a change of data, the path plot after a second simulation, and the mouse wheel over a plot.
Screenshots in tests/artifacts/.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from test_app_browser import (
    ARTIFACTS, field, fit, open_sample, row_with, select, tab, type_into,
)

pytestmark = pytest.mark.browser

UPLOAD = (b"time,died,age,dose\n" + b"".join(
    f"{5 + k},{k % 2},{40 + (k * 7) % 30},{1 + k % 3}\n".encode() for k in range(40)))


def dark_pixels(png: bytes, box: tuple[float, float, float, float]) -> int:
    """Pixels darker than mid-grey inside ``box`` (fractions of width and height)."""
    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("L")
    w, h = im.size
    crop = im.crop((int(box[0] * w), int(box[1] * h), int(box[2] * w), int(box[3] * h)))
    return int((np.asarray(crop) < 128).sum())


def test_results_opened_by_the_first_fit_draws_a_labelled_kaplan_meier(page):
    """Fresh session, Fit: Results opens itself and its KM has its title and y-axis labels
    (they were missing: the plot was blank or lost its axes)."""
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Fit")
    pg.get_by_role("button", name="Fit", exact=True).click()
    expect(row_with(pg, "fin")).to_have_count(1)  # Results opened itself, on the fit's HRs
    tab(pg, "Survival curves")
    curves = pg.locator(".km-curves .bk-Canvas").first
    expect(curves).to_be_visible()
    pg.wait_for_timeout(1000)  # the canvas paints after it is laid out
    box = curves.bounding_box()
    assert box["width"] > 600 and box["height"] > 300
    png = curves.screenshot()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "km_after_first_fit.png").write_bytes(png)
    # the left border (150 px of 900) holds the tick labels 0 .. 1 and "survival probability";
    # the top rows the title
    assert dark_pixels(png, (0.03, 0.15, 0.16, 0.85)) > 200
    assert dark_pixels(png, (0.17, 0.0, 0.6, 0.06)) > 200


def test_an_uploaded_event_column_leaves_the_covariates_and_the_fit_runs(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "File")
    pg.locator('input[type="file"]').first.set_input_files(files=[{
        "name": "deaths.csv", "mimeType": "text/csv", "buffer": UPLOAD}])
    expect(pg.get_by_text("file: deaths.csv —")).to_be_visible()
    select(pg, "Event", "died")
    expect(pg.get_by_text("Ready to fit.")).to_be_visible()
    chosen = field(pg, "Covariates").locator("select").nth(1)  # the CrossSelector's right box
    expect(chosen.locator("option", has_text=re.compile(r"^died$"))).to_have_count(0)
    fit(pg, "upload")
    expect(row_with(pg, "age")).to_have_count(1)
    expect(row_with(pg, "died")).to_have_count(0)


def test_fine_gray_is_reset_and_said_when_the_data_change(page):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "bmtcrr")
    tab(pg, "Design")
    select(pg, "Model", "fine_gray")
    expect(pg.get_by_text("Fine-Gray uses Breslow ties")).to_be_visible()
    open_sample(pg, "rossi")
    expect(pg.get_by_text("New data: model back to Cox (was fine_gray).").first).to_be_visible()
    tab(pg, "Design")
    expect(field(pg, "Model").locator("select")).to_have_value("cox")
    fit(pg, "rossi after bmtcrr")
    expect(pg.get_by_text(re.compile(r"rossi after bmtcrr — sample: rossi.*ties = efron"))
           ).to_be_visible()
    expect(row_with(pg, "fin")).to_have_count(1)


def test_simulate_again_after_the_path_is_no_error(page):
    """Simulate, L1, Draw the path, Simulate again: once an AttributeError (GridPlot)."""
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "Simulate")
    type_into(pg, "N (rows)", 600)
    type_into(pg, "P (covariates)", 5)
    pg.get_by_role("button", name="Simulate cohort").click()
    expect(pg.get_by_text("simulated N=600 P=5 —")).to_be_visible()
    tab(pg, "Design")
    pg.locator(".bk-btn", has_text=re.compile(r"^\s*L1\s*$")).first.click()
    tab(pg, "Fit")
    pg.get_by_role("button", name="Draw the path").click()
    expect(pg.get_by_text(re.compile(r"L1 path: 10 fits"))).to_be_visible()
    tab(pg, "Data")
    tab(pg, "Simulate")
    type_into(pg, "seed", 1)
    pg.get_by_role("button", name="Simulate cohort").click()
    expect(pg.get_by_text(re.compile(r"Simulated simulated N=600 P=5")).first).to_be_visible()
    assert pg.get_by_text(re.compile("failed unexpectedly")).count() == 0
    tab(pg, "Fit")
    expect(pg.get_by_text(re.compile(r"shows the fits from lambda_max"))).to_be_visible()


def test_the_mouse_wheel_over_a_plot_scrolls_the_page(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Results")
    tab(pg, "Survival curves")
    curves = pg.locator(".km-curves .bk-Canvas").first
    expect(curves).to_be_visible()
    pg.wait_for_timeout(500)
    scroller = """el => { let e = el; while (e) { const s = getComputedStyle(e);
        if (/(auto|scroll)/.test(s.overflowY) && e.scrollHeight > e.clientHeight) return e;
        e = e.parentElement || (e.getRootNode() && e.getRootNode().host); }
        return document.scrollingElement; }"""
    pg.set_viewport_size({"width": 1400, "height": 700})  # a page taller than the window
    before = curves.evaluate(f"el => ({scroller})(el).scrollTop")
    box = curves.bounding_box()
    pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 200))
    pg.mouse.wheel(0, 300)
    pg.wait_for_timeout(800)
    after = curves.evaluate(f"el => ({scroller})(el).scrollTop")
    assert after > before
