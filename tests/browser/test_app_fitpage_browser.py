"""The served app in headless Chromium: the penalty as a fraction of lambda_max (the number on
the page equals engine.lambda_max), the regularisation path on the Fit tab, a recode step on
the Data tab and the OMOP rules' checkboxes; screenshots in tests/artifacts/."""

from __future__ import annotations

import re

import pytest

import engine
from test_app_browser import (
    field, fit, row_with, shot, tab, type_into,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROSSI_COVARIATES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


def test_penalty_fraction_path_and_recode(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Design")
    pg.get_by_role("button", name="L1", exact=True).click()
    expect(pg.get_by_text(re.compile(r"L1 at 0\.05 x lambda_max \(lambda_max of this design "
                                     r"is computed when you fit")).first).to_be_visible()
    type_into(pg, "Strength (fraction of lambda_max", "0.1")
    fit(pg, "penalised")
    cohort = engine.Cohort.from_frame(engine.datasets.load_rossi(), time="week",
                                      event="arrest", covariates=ROSSI_COVARIATES)
    top = engine.lambda_max(cohort, ties="efron")
    tab(pg, "Fit")
    words = f"L1, lambda {float(f'{0.1 * top:.4g}'):.4g} = 0.1 x lambda_max {top:.4g}"
    expect(pg.get_by_text(words).first).to_be_visible()
    pg.get_by_role("button", name="Draw the path").click()
    expect(pg.get_by_text(re.compile(r"The L1 path: 10 fits in"))).to_be_visible()
    expect(pg.locator(".bk-Canvas, canvas").first).to_be_visible()
    shot(pg, "fit_penalty_path")
    # bootstrap intervals of the same penalised design, beside the model-based ones
    type_into(pg, "Bootstrap replicates", "30")
    pg.get_by_role("button", name="Bootstrap intervals").click()
    expect(pg.get_by_text(re.compile(r"bootstrap of 30 replicates of this design"))).to_be_visible()
    expect(row_with(pg, "fin", table=".bootstrap-table")).to_have_count(1)
    shot(pg, "fit_bootstrap")

    tab(pg, "Data")
    tab(pg, "Recode and filter")
    field(pg, "Column").locator("select").select_option("age")
    field(pg, "Step").locator("select").select_option(label="Cut into groups")
    type_into(pg, "Cut points", "25, 35")
    pg.get_by_role("button", name="Apply step").click()
    expect(pg.get_by_text("1. cut age at 25, 35 into age_group")).to_be_visible()
    shot(pg, "data_recode")

    tab(pg, "OMOP study")
    expect(pg.get_by_text("Restrict to the common period")).to_be_visible()
    expect(pg.get_by_text("Censor at the start of a new time at risk")).to_be_visible()
