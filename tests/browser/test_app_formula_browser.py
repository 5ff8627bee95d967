"""The served app in headless Chromium: a natural spline for age on rossi chosen on the Design
tab, a bad formula refused with the engine's message, an interaction typed in the formula box;
the fit's Wald table on Results equals engine.wald_test of engine.fit with the same formula, and
the hazard-ratio curve of age is drawn, and the Residuals page's term plot of age (R's termplot)
is the engine's. Screenshots in tests/artifacts/design_formula.png, results_splines.png and
results_term_plot.png."""

from __future__ import annotations

import re

import pytest

import engine
from engine import datasets
from test_app_browser import (
    field, fit, press_until, shot, tab,
)

pytestmark = pytest.mark.browser

TYPED = "fin * prio + ns(age, df=4) + race + wexp + mar + paro"
SHOWN = "fin + prio + ns(age, df=4) + race + wexp + mar + paro + fin:prio"


def apply_formula(pg, text, outcome):
    """Type ``text`` in the formula box and press Apply formula until ``outcome`` shows."""
    box = pg.locator(".model-formula textarea").first
    box.fill(text)
    box.blur()      # the box sends its value on change
    press_until(pg, "Apply formula", outcome)


def test_spline_and_interaction_give_the_engines_wald_table(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Design")
    field(pg, "Numeric covariate").locator("select").select_option("age")
    field(pg, "Its form").locator("select").select_option(label="natural spline, df 4")
    box = pg.locator(".model-formula textarea").first
    expect(box).to_have_value("fin + ns(age, df=4) + race + wexp + mar + paro + prio")
    apply_formula(pg, "fin + agee", pg.get_by_text(re.compile("Did you mean 'age'")).first)
    apply_formula(pg, TYPED, lambda timeout: expect(box).to_have_value(SHOWN, timeout=timeout))
    shot(pg, "design_formula")

    fit(pg, "age spline")
    tab(pg, "Results")
    tab(pg, "Splines and interactions")
    wald = pg.locator(".wald-table")
    wald.scroll_into_view_if_needed()
    row = wald.locator(".tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="term"]', has_text="ns(age, df=4)"))
    expect(row).to_have_count(1)
    chi2 = float(row.locator('.tabulator-cell[tabulator-field="chi2"]').inner_text())
    cohort = engine.Cohort.from_frame(datasets.load_rossi(), time="week", event="arrest",
                                      formula=SHOWN)
    expected = engine.wald_test(engine.fit(cohort, ties="efron"), term="ns(age, df=4)")
    assert chi2 == pytest.approx(expected["statistic"], abs=1e-4)
    curves = pg.locator(".effect-curves")
    curves.scroll_into_view_if_needed()
    expect(curves.locator(".bk-Canvas").first).to_be_visible()
    expect(pg.get_by_text(re.compile(
        r"each spline's or polynomial's hazard ratio against its variable"))).to_be_visible()
    shot(pg, "results_splines")
    # the spline's shape with its partial residuals (engine.term_plot = R's termplot, in
    # tests/engine/inference/test_term_plot.py; the page's numbers are the engine's in
    # tests/app/survival/test_app_residuals.py)
    tab(pg, "Residuals")
    field(pg, "Functional form of").locator("select").select_option("age")
    pg.get_by_role("button", name="Show residuals").click()
    expect(pg.locator(".term-note")).to_contain_text("The term ns(age, df=4) of age")
    expect(pg.locator(".term-figure img")).to_be_visible()
    pg.locator(".term-figure").scroll_into_view_if_needed()
    shot(pg, "results_term_plot")
