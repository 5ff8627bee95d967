"""The Bayesian tab in headless Chromium (the helpers and fixtures of test_app_browser: one
`panel serve` per test process, a fresh context per test): run the sampler on the bundled
breast-cancer data with few draws and read a posterior mean and the probit MLE off the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_app_browser import (
    shot, tab, type_into,
)

import engine

pytestmark = pytest.mark.browser

RUN = {"draws": 60, "burn_in": 20, "chains": 2, "seed": 3}


def _cell(pg, coefficient, column):
    row = pg.locator(".bayes-compare .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="coefficient"]',
        has_text=re.compile(rf"^\s*{re.escape(coefficient)}\s*$")))
    return float(row.locator(f'.tabulator-cell[tabulator-field="{column}"]').inner_text())


def test_breast_cancer_posterior_mean_on_the_page_is_the_engines(page):
    from playwright.sync_api import expect

    df = engine.datasets.load_breast_cancer()
    means = [c for c in df.columns if c.startswith("mean ")]
    cohort = engine.Cohort.from_frame(df, time=None, event="target_benign", covariates=means)
    post = engine.sample(cohort, **RUN)
    mle = engine.probit_mle(cohort)
    sd = df["mean concave points"].std(ddof=0)   # the page shows coefficients per SD

    pg = page
    tab(pg, "Bayesian")
    expect(pg.get_by_text("Outcome: target_benign")).to_be_visible()
    type_into(pg, "Draws per chain", RUN["draws"])
    type_into(pg, "Burn-in", RUN["burn_in"])
    type_into(pg, "Chains", RUN["chains"])
    type_into(pg, "Seed", RUN["seed"])
    pg.get_by_role("button", name="Run sampler").click()
    expect(pg.get_by_text(re.compile(r"^(Done: 120 draws|Sampling failed|Cannot sample)"))
           ).to_be_visible()
    assert pg.get_by_text("Sampling failed").count() == 0
    expect(pg.locator(".bk-Canvas").first).to_be_attached()       # the caterpillar
    shot(pg, "bayes")
    tab(pg, "Beside the MLE")
    shown = _cell(pg, "mean concave points", "posterior mean")
    want = post.summary.loc["mean concave points", "mean"] * sd
    assert shown == pytest.approx(round(want, 4), abs=1e-12)
    shown_mle = _cell(pg, "mean concave points", "MLE")
    assert shown_mle == pytest.approx(round(mle.coef["mean concave points"] * sd, 4), abs=1e-12)
    expect(pg.locator(".bk-Canvas").nth(1)).to_be_attached()      # MLE scatter, shrinkage
    tab(pg, "Chains")
    expect(pg.locator(".bk-Canvas").nth(2)).to_be_attached()      # two traces, autocorrelation
    shot(pg, "bayes_chains")
    tab(pg, "Convergence")
    expect(pg.locator(".bayes-diagnostics .tabulator-row")).to_have_count(11)
    tab(pg, "Downloads")
    with pg.expect_download() as info:
        pg.get_by_role("button", name="Python script").click()
    script = Path(info.value.path()).read_text()
    assert "seed=3," in script and "draws=60," in script and "engine.sample(" in script
