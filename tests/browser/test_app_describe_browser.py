"""A first-time rossi analysis in headless Chromium, as a user clicks it: Describe (Table 1 by fin,
Kaplan-Meier by fin with the log-rank test and the medians, incidence rates, standardised by
age), a Cox fit, the PH check, the report folder; and Gray's test on bmtcrr. The numbers are read from the page and compared with
independent oracles (lifelines' log-rank = R's survdiff, pandas, R's published cmprsk output,
engine.ph_test = R's cox.zph by tests/engine/inference/test_ph_test.py). Screenshots in tests/artifacts/.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from lifelines.statistics import logrank_test

import engine
from test_app_browser import (
    assert_no_traceback, field, fit, open_sample, select, shot, tab, type_into,
)

pytestmark = pytest.mark.browser

ROSSI = pd.read_csv(Path(__file__).resolve().parents[2] / "sample_data" / "rossi.csv")


def test_first_rossi_analysis(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "Describe")
    expect(field(pg, "Group by").locator("select")).to_have_value("fin")
    # Table 1 by fin: n per arm and age as mean (SD), from pandas
    table_one = pg.locator(".table-one")
    expect(table_one.locator(".tabulator-cell", has_text=re.compile(r"^\s*432\s*$"))).to_have_count(1)
    for fin in (0, 1):
        age = ROSSI.loc[ROSSI["fin"] == fin, "age"]
        cell = f"{age.mean():.1f} ({age.std():.1f})"
        expect(table_one.locator(".tabulator-cell", has_text=cell).first).to_be_visible()
    # the log-rank test on the page = lifelines' = R's survdiff(Surv(week, arrest) ~ fin)
    a, b = ROSSI[ROSSI["fin"] == 0], ROSSI[ROSSI["fin"] == 1]
    oracle = logrank_test(a["week"], b["week"], a["arrest"], b["arrest"])
    test = pg.locator(".survival-test")
    expect(test).to_contain_text("Log-rank: chi-square")
    # the pane's text sits in its shadow root; its DOM text (innerText can be empty for a
    # pane Chromium has not painted yet, as on a page built when its tab is opened)
    text = test.locator("p").first.text_content()
    found = re.search(r"chi-square = ([\d.]+) on (\d+) df, p = ([\d.]+)", text)
    assert found, repr(text)
    chisq, df, p = found.groups()
    assert float(chisq) == pytest.approx(oracle.test_statistic, abs=0.005)      # 3.84
    assert int(df) == 1 and float(p) == pytest.approx(oracle.p_value, rel=1e-3)  # 0.0501
    # medians: the curves stay above 0.5 in 52 weeks (R prints NA); n and events per arm
    medians = pg.locator(".median-table")
    expect(medians.locator(".tabulator-cell", has_text="not reached")).to_have_count(2)
    for events in ("66", "48"):
        expect(medians.locator('.tabulator-cell[tabulator-field="events"]',
                               has_text=re.compile(rf"^\s*{events}\s*$"))).to_have_count(1)
    expect(pg.locator(".survival-figure img")).to_be_visible()
    # one confidence transform for the bands and tables: R's log by default, log-log chosen
    caption = pg.locator(".survival-caption")
    expect(caption).to_contain_text("pointwise 95% CI (log)")
    select(pg, "Confidence limits (bands and tables)", "log-log")
    expect(caption).to_contain_text("pointwise 95% CI (log-log)")
    with pg.expect_download() as info:
        pg.get_by_role("button", name="Figure (PNG)").click()
    assert Path(info.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shot(pg, "describe_rossi")
    # incidence rates per 1,000 person-weeks, R's poisson.test (tests/data/r_incidence_rates)
    rates = pg.locator(".rates-table")
    rates.scroll_into_view_if_needed()
    expect(rates.locator(".tabulator-cell", has_text=re.compile(r"^\s*6\.8154\s*$"))) \
        .to_have_count(1)                                                  # 6.81536555
    comparisons = pg.locator(".rate-comparisons-table")
    expect(comparisons.locator(".tabulator-cell", has_text="fin = 1 vs fin = 0")) \
        .to_have_count(1)
    expect(comparisons.locator(".tabulator-cell", has_text=re.compile(r"^\s*0\.6956\s*$"))) \
        .to_have_count(1)                                                  # 0.69559596
    expect(pg.locator(".rates-caption")).to_contain_text("exact Poisson 95% limits")
    type_into(pg, "Split follow-up at (comma-separated times)", "20, 40")
    expect(rates.locator(".tabulator-cell", has_text=re.compile(r"^\s*7\.7327\s*$"))) \
        .to_have_count(1)                                 # fin = 0, weeks (20, 40]: 7.7327
    expect(comparisons.locator(".tabulator-row")).to_have_count(3)       # one a band
    shot(pg, "describe_rossi_rates")
    # standardised by age bands: R's Fay-Feuer rates and poisson.test SMRs
    # (tests/data/r_standardized_rates.Rout)
    select(pg, "Standardise by", "age")
    expect(pg.locator(".standardized-caption")).to_contain_text("type the bands")
    type_into(pg, "in bands at (numbers, comma-separated)", "19, 22, 25, 30")
    standardized = pg.locator(".standardized-table")
    expect(standardized.locator(".tabulator-cell", has_text=re.compile(r"^\s*6\.7788\s*$"))) \
        .to_have_count(1)                                                  # 6.77878728
    expect(pg.locator(".standardized-comparisons-table .tabulator-cell",
                      has_text=re.compile(r"^\s*0\.7139\s*$"))).to_have_count(1)  # SRR
    expect(pg.locator(".smr-table .tabulator-cell",
                      has_text=re.compile(r"^\s*0\.8351\s*$"))).to_have_count(1)  # SMR fin=1
    expect(pg.locator(".standardized-caption")).to_contain_text("Fay and Feuer")
    # by attained age: age at release grows by week / 52.18 (R's survSplit on the age scale)
    type_into(pg, "time units per unit of it", "52.18")
    pg.get_by_role("button", name="attained (its value at time 0, growing)").click()
    type_into(pg, "in bands at (numbers, comma-separated)", "19.5, 22.5, 25.5, 30.5")
    expect(standardized.locator(".tabulator-cell", has_text=re.compile(r"^\s*6\.8005\s*$"))) \
        .to_have_count(1)                                                  # 6.80050148
    expect(pg.locator(".standardized-caption")).to_contain_text("by attained age")
    standardized.scroll_into_view_if_needed()
    shot(pg, "describe_rossi_standardized")
    # to the WHO World Standard Population (its age groups: R with the published weights;
    # a year of follow-up at 52.18 weeks a year crosses none of its limits)
    select(pg, "Standard weights", "WHO World Standard Population 2000-2025")
    expect(standardized.locator(".tabulator-cell", has_text=re.compile(r"^\s*7\.0417\s*$"))) \
        .to_have_count(1)                                                  # 7.04171845
    expect(pg.locator(".standardized-caption")).to_contain_text("15-19 0.1843")
    shot(pg, "describe_rossi_who_standard")
    pg.get_by_role("button", name="KMunicate table").click()
    expect(pg.locator(".survival-caption")).to_contain_text("events and censored so far")
    shot(pg, "describe_rossi_kmunicate")

    fit(pg, "rossi cox")
    tab(pg, "Results")
    expect(pg.locator(".fit-tests")).to_contain_text("Likelihood ratio test = 33.27 on 7 df")
    tab(pg, "Proportional hazards")
    expected = engine.ph_test(engine.fit(engine.Cohort.from_frame(
        ROSSI, "week", "arrest", covariates=["fin", "age", "race", "wexp", "mar", "paro",
                                              "prio"]), ties="efron")).table.loc["GLOBAL"]
    info_ = pg.locator(".ph-info")
    expect(info_).to_contain_text("Global test")
    chisq, p = re.search(r"chi-square = ([\d.]+) on 7 df, p = ([\d.]+)", info_.locator("p").first.text_content()).groups()
    assert float(chisq) == pytest.approx(expected["chisq"], abs=0.005)   # 17.69
    assert float(p) == pytest.approx(expected["p"], rel=1e-3)            # 0.01343
    age = pg.locator(".ph-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="term"]', has_text=re.compile(r"^\s*age\s*$")))
    expect(age.locator('.tabulator-cell[tabulator-field="PH"]')).to_have_text("doubtful")
    expect(pg.locator(".ph-figure img")).to_be_visible()
    pg.locator(".ph-figure").scroll_into_view_if_needed()
    shot(pg, "results_ph_check")

    tab(pg, "Export")
    with pg.expect_download() as info:
        pg.get_by_role("button", name="Report folder (ZIP)").click()
    archive = zipfile.ZipFile(io.BytesIO(Path(info.value.path()).read_bytes()))
    assert {"table_one.csv", "kaplan_meier.png", "kaplan_meier.svg", "hazard_ratios.csv",
            "forest.svg", "ph_test.csv", "beta_t.png"} <= set(archive.namelist())
    zph = pd.read_csv(io.BytesIO(archive.read("ph_test.csv"))).set_index("term")
    assert zph.loc["GLOBAL", "chisq"] == pytest.approx(expected["chisq"], rel=1e-9)


def test_competing_risks_show_grays_test(page):
    from playwright.sync_api import expect

    pg = page
    open_sample(pg, "bmtcrr")
    tab(pg, "Describe")
    select(pg, "Group by", "D")
    # R: cmprsk::cuminc(bmtcrr$ftime, bmtcrr$Status, bmtcrr$D): stat 2.8623325, pv 0.09067592
    expect(pg.locator(".survival-test")).to_have_text(
        "Gray's test for cause 1: chi-square = 2.86 on 1 df, p = 0.0907")
    expect(pg.locator(".median-table")).to_be_hidden()       # no Kaplan-Meier here
    # the incidence at chosen times with R's limits: survfit(Surv(ftime, factor(Status)) ~ D)
    # at month 10, D=ALL 0.3287671 (0.2368844 to 0.4562893; tests/data/r_cif_robust.Rout)
    type_into(pg, "Cumulative incidence at times (comma-separated)", "10, 50")
    row = pg.locator(".survival-at-table .tabulator-row", has=pg.locator(
        '.tabulator-cell[tabulator-field="group"]', has_text="D = ALL")).first
    expect(row).to_contain_text("0.3288")
    expect(row).to_contain_text("0.2369")
    shot(pg, "describe_bmtcrr_cif")
    assert_no_traceback(pg)
