"""A Poisson regression of rates from the Design tab, without a browser: the Results tab's
incidence rate ratios against statsmodels' Poisson GLM with log person-time as the offset, the
pages that are for Cox or Fine-Gray fits saying so, the forest plot without the baseline rate,
strata refused with the fix while the kept fit stays, and the report folder's table and
script."""
import io
import zipfile

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import engine
from app.data.store import Store
from app.export.view import ExportView
from app.survival.design import DesignView
from app.survival.jobs import nested_lr_tests
from app.survival.results import ResultsView, forest_rows
from app.survival.state import Workbench
from rossi_episodes import survsplit

NAMES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def poisson_fit():
    import panel as pn

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    store.model = "poisson"
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
    yield store, bench, results
    pn.state.reset()


def test_incidence_rate_ratios_as_statsmodels(poisson_fit):
    store, bench, results = poisson_fit
    rossi = store.data
    glm = sm.GLM(rossi["arrest"], sm.add_constant(rossi[NAMES].astype(float)),
                 family=sm.families.Poisson(), offset=np.log(rossi["week"])).fit(tol=1e-12)
    table = results.hr.value.set_index("covariate")
    assert results.hr_title.object == "### Incidence rate ratios (Poisson)"
    assert {"IRR", "IRR_lower", "IRR_upper"} <= set(table.columns) and "hr" not in table
    assert list(table.index) == ["(intercept)", *NAMES]
    np.testing.assert_allclose(table["coef"], glm.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(table["se"], glm.bse.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(table["IRR"], np.exp(glm.params.to_numpy()), rtol=1e-6)
    lower = np.exp(glm.params - 1.959963984540054 * glm.bse).to_numpy()
    np.testing.assert_allclose(table["IRR_lower"], lower, rtol=1e-6)
    info = results.fit_info.object
    assert "ties =" not in info and "n = 432, events = 114" in info
    assert "the g-formula for rates" in results.adjusted.info.object
    assert not results.adjusted.at.visible and not results.adjusted.draw.disabled
    assert "is for Cox fits" in results.ph.info.object
    assert "(intercept)" not in forest_rows(bench.fits[-1]).index
    lr = 2 * (glm.llf - glm.llnull)            # statsmodels' null model keeps the offset
    assert f"Likelihood ratio test = {lr:.2f} on 7 df" in results.fit_tests.object
    assert "Score test" in results.fit_tests.object and "log-rank" not in results.fit_tests.object


def test_adjusted_rates_by_the_treatment(poisson_fit):
    """The Adjusted curves page of a Poisson fit: engine.adjusted_rates by fin, on the page
    and in the report folder."""
    import asyncio

    _, bench, results = poisson_fit
    asyncio.run(results.adjusted.compute())
    want = engine.adjusted_rates(bench.fits[-1].result, "fin")
    np.testing.assert_allclose(results.adjusted.rates.value["adjusted rate per 1,000"],
                               want.rates["rate"], rtol=1e-12)
    assert results.adjusted.contrasts.value["rate ratio"].iloc[0] == pytest.approx(
        want.contrasts["ratio"].iloc[0], rel=1e-12)
    files = results.adjusted.files()
    assert set(files) == {"adjusted_rates.csv", "adjusted_rate_contrasts.csv"}
    assert "difference" in files["adjusted_rate_contrasts.csv"].decode()


def test_strata_are_refused_and_the_fit_kept(poisson_fit):
    store, bench, _ = poisson_fit
    kept = len(bench.fits)
    store.strata = ["race"]
    try:
        with pytest.raises(Exception, match="strata"):
            bench.fit_job().run()
    finally:
        store.strata = []
    assert len(bench.fits) == kept


def test_follow_up_bands_are_the_piecewise_exponential_model(poisson_fit):
    """The Design tab's band limits: a baseline rate per follow-up band, as statsmodels' GLM
    on survSplit rows with band dummies; a bad entry is said and the bands stay; the script
    and the spec carry them."""
    store, bench, results = poisson_fit
    design = DesignView(store=store)
    assert design.bands.visible
    design.bands.value = "40, 20"
    assert store.bands == [20.0, 40.0] and design.bands.value == "20, 40"
    design.bands.value = "20, soon"                     # said; the bands stay
    assert store.bands == [20.0, 40.0]
    try:
        bench.keep(bench.fit_job().run())
        split = survsplit(store.data, [20, 40])
        X = split[NAMES].astype(float).assign(b2=(split["band"] == 2) * 1.0,
                                              b3=(split["band"] == 3) * 1.0)
        glm = sm.GLM(split["arrest"], sm.add_constant(X), family=sm.families.Poisson(),
                     offset=np.log(split["week"] - split["start"])).fit(tol=1e-12)
        table = results.hr.value.set_index("covariate")
        assert list(table.index[-2:]) == ["follow-up (20, 40]", "follow-up > 40"]
        np.testing.assert_allclose(table["coef"], glm.params.to_numpy(), rtol=1e-6)
        flat = sm.GLM(split["arrest"], sm.add_constant(X[NAMES]), family=sm.families.Poisson(),
                      offset=np.log(split["week"] - split["start"])).fit(tol=1e-12)
        lr = nested_lr_tests(bench.fits).set_index("larger fit").loc[bench.fits[-1].name]
        assert lr["df"] == 2 and lr["LR statistic"] == pytest.approx(
            2 * (glm.llf - flat.llf), rel=1e-6)               # both fits on the split rows
        assert "bands=[20.0, 40.0]" in store.python_script()
        assert store.spec()["design"]["bands"] == [20.0, 40.0]
        store.model = "cox"                             # bands are Poisson's alone
        assert not design.bands.visible and "bands" not in store.fit_options()
    finally:
        store.model, store.bands = "poisson", []
        bench.fits.pop()


def test_report_folder_names_the_ratio(poisson_fit):
    store, bench, results = poisson_fit
    export = ExportView(store=store, workbench=bench, results=results)
    assert export.hr_csv.label == "Incidence rate ratios (CSV)"
    assert export.hr_csv.filename == "incidence_rate_ratios.csv"
    archive = zipfile.ZipFile(io.BytesIO(export.report_bytes()))
    names = archive.namelist()
    assert not any(n.endswith("hazard_ratios.csv") for n in names)
    table = pd.read_csv(archive.open(next(n for n in names
                                          if n.endswith("incidence_rate_ratios.csv"))))
    assert "IRR" in table and table["covariate"].iloc[0] == "(intercept)"
    comparison = pd.read_csv(export.comparison_text())
    assert "ratio fin" in comparison and "HR fin" not in comparison
    script = archive.read(next(n for n in names if n.endswith("survscan_analysis.py"))).decode()
    assert "model='poisson'" in script
