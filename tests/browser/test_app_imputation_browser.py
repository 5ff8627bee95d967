"""The served app in headless Chromium: R's lung data opened as a complete-case analysis
(227 of 228 patients: ph.ecog is missing for one), fitted, then Results' Missing data page
imputes ph.ecog 5 times by SMC-FCS and pools; the pooled hazard ratio of sex on the page is
engine.impute(...).fit(...)'s, beside the complete-case fit's.
Screenshot in tests/artifacts/results_missing_data.png."""

from __future__ import annotations

import re

import pytest

import engine
from test_app_browser import fit, open_sample, row_with, shot, tab, type_into

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_lung_imputed_and_pooled_on_the_page(page):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "lung")
    fit(pg, "complete cases")
    tab(pg, "Results")
    tab(pg, "Missing data")
    expect(pg.locator(".imputation-info")).to_contain_text("ph.ecog 1; 227 of 228 rows")
    type_into(pg, "Data sets (m)", 5)
    pg.get_by_role("button", name="Impute and fit").click()
    lung = engine.datasets.load_lung()
    want = engine.impute(lung, "time", "status", columns=["ph.ecog"],
                         predictors=["age", "sex"], m=5, seed=1).fit(
        covariates=["age", "sex", "ph.ecog"], ties="efron").summary
    row = row_with(pg, "sex", table=".imputation-table")
    expect(row.locator('[tabulator-field="HR"]')).to_have_text(
        re.compile(rf"^\s*{want.loc['sex', 'hr']:.4f}\s*$"))
    complete = engine.fit(engine.Cohort.from_frame(lung, "time", "status",
                                                   ["age", "sex", "ph.ecog"], missing="drop"),
                          ties="efron")
    expect(row).to_contain_text(f"{complete.summary.loc['sex', 'hr']:.4f}")
    expect(pg.locator(".imputed-columns")).to_contain_text("ph.ecog")
    shot(pg, "results_missing_data")
