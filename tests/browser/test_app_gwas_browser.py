"""The GWAS tab in headless Chromium: the default scan of the bundled toy data, its top hit's
p-value on the page equal to gwas.scan's, the plots drawn (the helpers and fixtures of
test_app_browser: one `panel serve` per test process, a fresh context per test)."""

from __future__ import annotations

import re

import pytest
from test_app_browser import (
    shot, tab,
)

from app.gwas.state import TOY
from engine import gwas

pytestmark = pytest.mark.browser


def test_default_toy_scan_shows_gwas_scans_top_hit(page):
    from playwright.sync_api import expect

    res = gwas.scan(bed=TOY / "toydata.5chrom", pheno=TOY / "toydata.phe",
                    covar=TOY / "toydata.cov", kinship="loco")
    best = res.frame.loc[res.frame.PValue.idxmin()]

    pg = page
    tab(pg, "GWAS")
    pg.get_by_role("button", name="Run scan").click()
    expect(pg.get_by_text(re.compile(r"^Scan (done in|failed)"))).to_be_visible()
    assert pg.get_by_text("Scan failed").count() == 0
    expect(pg.get_by_text(re.compile(r"1 trait\(s\) x 10,000 SNPs on 500 people, kinship loco"))
           ).to_be_visible()
    first = pg.locator(".gwas-top-hits .tabulator-row").first
    expect(first.locator('.tabulator-cell[tabulator-field="SNP"]')).to_have_text(best.SNP)
    shown = first.locator('.tabulator-cell[tabulator-field="PValue"]').inner_text()
    assert float(shown) == pytest.approx(best.PValue, rel=5e-7)        # 6 significant digits
    h2 = pg.locator(".gwas-h2-table .tabulator-row").first
    shown_h2 = h2.locator('.tabulator-cell[tabulator-field="h2"]').inner_text()
    assert float(shown_h2) == pytest.approx(res.h2.loc["toydata.phe"].mean(), abs=5e-7)
    tab(pg, "Manhattan and QQ")
    expect(pg.locator(".bk-Canvas").nth(1)).to_be_attached()     # Manhattan, QQ
    shot(pg, "gwas")


def test_simulated_traits_fill_the_heatmap(page):
    from playwright.sync_api import expect

    pg = page
    tab(pg, "GWAS")
    pg.get_by_role("button", name="Simulate traits on the genotypes").click()
    traits = pg.locator(".bk-input-group", has_text="Traits").filter(
        has_not_text="to scan").locator("input").first
    traits.fill("300")
    traits.press("Enter")
    pg.get_by_role("button", name="all", exact=True).click()
    pg.get_by_role("button", name="Run scan").click()
    expect(pg.get_by_text(re.compile(r"^Scan (done in|failed)"))).to_be_visible()
    expect(pg.get_by_text(re.compile(r"300 trait\(s\) x 10,000 SNPs on 500 people, kinship all; "
                                     r"rows with p <= 0.1 kept"))).to_be_visible()
    expect(pg.locator(".gwas-h2-table .tabulator-row").first).to_be_visible()
    tab(pg, "Locus heatmap")
    expect(pg.locator(".bk-Canvas").first).to_be_attached()
    shot(pg, "gwas_simulated")
