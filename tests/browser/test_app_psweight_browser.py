"""The served app in headless Chromium: weighting rossi by a propensity score on the Data tab
(the recode step "Weight by a propensity score"), then fitting: the weight column becomes the
Weights role, the page shows balance and the two plots, and the fit's hazard ratio and its
robust SE equal engine.fit with engine.propensity_weights' weights; the adjusted curves by
treatment drawn on Results, their difference at the median event time engine.adjusted_curves';
Uno's C on the page engine.predictive_performance's.
Screenshots in tests/artifacts/data_psweight.png and results_adjusted.png."""

from __future__ import annotations

import re

import numpy as np
import pytest

import engine
from test_app_browser import (
    field, fit, row_with, shot, tab,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def choose(pg, label, values):
    """Pick ``values`` in the multi-choice box labelled ``label`` (Choices.js: open the list,
    click the option)."""
    box = field(pg, label)
    for value in values:
        box.locator(".choices").first.click()
        box.locator(".choices__item--choice", has_text=re.compile(rf"^\s*{value}\s*$")) \
            .first.click()
    pg.keyboard.press("Escape")


def test_weight_by_propensity_score_then_fit(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Data")
    tab(pg, "Recode and filter")
    field(pg, "Column").locator("select").select_option("fin")
    field(pg, "Step").locator("select").select_option(
        label="Weight by a propensity score (column = 0/1 treatment)")
    choose(pg, "Propensity-score covariates", ["age", "prio", "race"])
    pg.get_by_role("button", name="Apply step").click()
    expect(pg.get_by_text(re.compile(r"1\. ps_weight: ATE weights from a propensity score of "
                                     r"fin on age, prio, race"))).to_be_visible()
    expect(pg.get_by_text(re.compile(r"is the Weights role .*effective sample size"))) \
        .to_be_visible()
    expect(pg.get_by_text("Covariate balance (dashed: 0.1)").or_(
        pg.locator(".bk-Canvas, canvas")).first).to_be_visible()
    shot(pg, "data_psweight")

    fit(pg, "iptw")
    tab(pg, "Results")
    rossi = engine.datasets.load_rossi()
    w = engine.propensity_weights(rossi, treatment="fin",
                                  covariates=["age", "prio", "race"]).weights
    names = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]
    want = engine.fit(engine.Cohort.from_frame(rossi.assign(w=w), time="week", event="arrest",
                                               covariates=names, weights="w"), ties="efron")
    assert want.variance == "robust"
    row = row_with(pg, "fin")
    expect(row).to_contain_text(f"{want.summary.loc['fin', 'hr']:.6f}")
    expect(row).to_contain_text(f"{want.se['fin']:.6f}")       # the robust SE
    expect(pg.get_by_text(re.compile(r"robust", re.I)).first).to_be_visible()

    # adjusted survival by fin from the weighted fit, and the difference at the median time
    tab(pg, "Adjusted curves")
    pg.get_by_role("button", name="Draw adjusted curves").click()
    rows = pg.locator(".adjusted-table .tabulator-row")
    expect(rows.first).to_be_visible()
    times = np.unique(rossi["week"][rossi["arrest"] > 0])
    at = float(np.median(times))
    adjusted = engine.adjusted_curves(want, "fin", times=np.unique(np.append(times, at)))
    diff = adjusted.contrasts.set_index("time").loc[at, "difference"]
    expect(rows.first).to_contain_text(f"{diff:.4f}")
    shot(pg, "results_adjusted")

    # how well the weighted fit predicts, at the quartiles of the event times
    tab(pg, "How well it predicts")
    pg.get_by_role("button", name="Compute prediction metrics").click()
    quartiles = np.unique(np.quantile(rossi["week"][rossi["arrest"] > 0], [0.25, 0.5, 0.75]))
    perf = engine.predictive_performance(want, times=quartiles)
    expect(pg.locator(".prediction-summary")).to_contain_text(
        f"Uno's C (up to {quartiles[-1]:g}) = {perf.summary['uno_c']:.3f}")

    # the weighted Kaplan-Meier curves and log-rank test by fin on Describe: the weights are
    # sampling weights, so R's robust variance (engine.logrank_test = R's robust score test)
    tab(pg, "Describe")
    weighted = engine.Cohort.from_frame(rossi.assign(w=w), "week", "arrest", covariates=["fin"],
                                        weights="w")
    test = engine.logrank_test(weighted, by="fin")
    assert test.spec["variance"] == "robust by row"
    expect(pg.locator(".survival-test")).to_contain_text(
        f"Log-rank (robust by row variance): chi-square = {test.statistic:.2f}")
    expect(pg.locator(".survival-caption")).to_contain_text(
        "robust (infinitesimal-jackknife) variance by row")
    shot(pg, "describe_iptw")
