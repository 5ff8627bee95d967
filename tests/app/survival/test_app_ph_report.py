"""Results' PH check, global tests, concordance and sHR labels, and the Export tab's report folder,
without a browser; numbers against R's published rossi output, lifelines and statsmodels."""

import io
import json
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter
from PIL import Image

import engine
from app.data.store import Store
from app.describe.view import DescribeView
from app.export.view import ExportView
from app.survival.results import CURVES, ResultsView
from app.survival.state import Workbench

NAMES = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@pytest.fixture(scope="module")
def fitted():
    """Rossi with its Cox fit kept, as Results, Describe and Export see it (read only)."""
    import holoviews as hv
    import panel as pn

    hv.extension("bokeh")
    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    results = ResultsView(store=store, workbench=bench)
    describe = DescribeView(store=store)
    bench.keep(bench.fit_job().run())
    yield store, results, describe
    pn.state.reset()


def test_fit_summary_has_global_tests_and_concordance(fitted):
    store, results, _ = fitted
    text = results.fit_tests.object
    # R: summary(coxph(Surv(week, arrest) ~ fin + age + race + wexp + mar + paro + prio, rossi))
    for expected in ("Likelihood ratio test = 33.27 on 7 df", "Wald test = 32.11 on 7 df",
                     "Score (log-rank) test = 33.53 on 7 df"):
        assert expected in text
    cph = CoxPHFitter().fit(store.data[["week", "arrest", *NAMES]], "week", "arrest")
    assert f"Concordance (Harrell's C) = {cph.concordance_index_:.3f}" in text


def test_a_clustered_fits_tests_say_which_read_the_robust_variance(rossi):
    """R's summary.coxph of a fit with clusters: its Wald test reads the sandwich and a robust
    score test follows (R 4.2.2: Wald 21.92, robust score 12.43; test_global_tests.py)."""
    from app.survival.jobs import fit_tests

    df = rossi.assign(site=np.arange(len(rossi)) % 25)
    res = engine.fit(engine.Cohort.from_frame(df, "week", "arrest",
                                              covariates=["fin", "age", "prio"]),
                     ties="breslow", cluster=df["site"])
    text = fit_tests(res)
    assert "Wald test = 21.92 on 3 df" in text and "Robust score test = 12.43 on 3 df" in text
    assert "the Wald and robust score tests do not" in text


def test_ph_check_table_plot_and_cut_point():
    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
    ph = results.ph
    zph = ph.table.value.set_index("term")
    fit = bench.fits[-1].result
    expected = engine.ph_test(fit).table  # = R's cox.zph (tests/engine/inference/test_ph_test.py)
    np.testing.assert_allclose(zph["chisq"], expected["chisq"], rtol=1e-12)
    assert zph.loc["age", "PH"] == "doubtful" and zph.loc["fin", "PH"] == "ok"
    glob = expected.loc["GLOBAL"]
    assert (f"Global test: chi-square = {glob['chisq']:.2f} on 7 df, p = {glob['p']:.4g}"
            in ph.info.object)
    assert "PH is doubtful (p < 0.05) for: age, wexp." in ph.info.object
    texts = ["".join(t.itertext()) for t in
             ET.fromstring(ph.figure.object.encode()).iter("{http://www.w3.org/2000/svg}text")]
    titles = [t for t in texts if "PH test p" in t]
    assert titles[0] == f"age: PH test p = {expected.loc['age', 'p']:.3g}"  # smallest p first
    assert len(titles) == 7
    assert ph.action.visible and ph.covariate.value == "age"
    ph.cut.value = 20.0
    ph._add_cut()
    assert store.cut_points == {"age": [20.0]}
    assert "refit in the Fit tab" in ph.info.object
    bench.keep(bench.fit_job().run())      # the refit has age before and after 20
    assert any(name.startswith("age") and "20" in name for name in results.hr.value["covariate"])
    # cox.zph of the cut-point fit: age before and after 20 are terms of their own (as R's
    # cox.zph of the survSplit fit, tests/engine/inference/test_ph_test_cut_points.py)
    zph = ph.table.value.set_index("term")
    expected = engine.ph_test(bench.fits[-1].result).table
    assert {"age[0,20)", "age[20,inf)"} <= set(zph.index)
    np.testing.assert_allclose(zph["chisq"], expected["chisq"], rtol=1e-12)
    assert "a term of its own" in ph.info.object
    assert "age" in ph.covariate.options          # more cut points go to age itself


def test_a_large_fit_is_checked_on_request_and_draws_a_sample_of_its_dots(monkeypatch):
    """Past AUTO_CELLS rows x coefficients the check waits for its button (10^6 x 20 took a
    minute inside the fit's own result patch); beta(t) draws MAX_DOTS residuals per panel."""
    from app.survival import ph_check

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("rossi")
    results = ResultsView(store=store, workbench=bench)
    monkeypatch.setattr(ph_check, "AUTO_CELLS", 1_000)        # rossi: 432 x 7
    monkeypatch.setattr(ph_check, "MAX_DOTS", 50)
    bench.keep(bench.fit_job().run())
    ph = results.ph
    assert ph.run.visible and ph.table.value.empty and "432 rows x 7 coefficients" in \
        ph.info.object
    ph.run.clicks += 1                        # outside a served page: the check at once
    expected = engine.ph_test(bench.fits[-1].result).table
    np.testing.assert_allclose(ph.table.value.set_index("term")["chisq"], expected["chisq"],
                               rtol=1e-12)
    dots = [line for line in ph._fig.axes[0].lines if line.get_marker() == "."]
    assert len(dots) == 1 and len(dots[0].get_xdata()) == 50


def test_fine_gray_results_are_subdistribution_hazard_ratios():
    import panel as pn

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("bmtcrr")
    store.model = "fine_gray"
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
    assert results.hr_title.object == "### Subdistribution hazard ratios (Fine-Gray)"
    assert {"sHR", "sHR_lower", "sHR_upper"} <= set(results.hr.value.columns)
    assert "hr" not in results.hr.value.columns
    assert "pseudo-likelihood" in results.fit_tests.object
    assert "Concordance: not available (" in results.fit_tests.object   # said, not hidden
    assert "the PH check (R's cox.zph) is for Cox fits" in results.ph.info.object
    export = ExportView(store=store, workbench=bench, results=results)
    assert export.hr_csv.label == "Subdistribution hazard ratios (CSV)"
    assert export.hr_csv.filename == "subdistribution_hazard_ratios.csv"
    pn.state.reset()


def test_report_folder(fitted):
    store, results, describe = fitted
    export = ExportView(store=store, workbench=results.workbench, results=results,
                        describe=describe)
    archive = zipfile.ZipFile(io.BytesIO(export.report_bytes()))
    names = set(archive.namelist())
    assert {"README.txt", "table_one.csv", "kaplan_meier.png", "kaplan_meier.svg",
            "medians.csv", "logrank.csv", "hazard_ratios.csv", "forest.png", "forest.svg",
            "ph_test.csv", "beta_t.png", "beta_t.svg", "survscan_spec.json",
            "survscan_analysis.py"} <= names
    for name in names:
        content = archive.read(name)
        if name.endswith(".png"):
            assert Image.open(io.BytesIO(content)).format == "PNG"
        elif name.endswith(".svg"):
            assert ET.fromstring(content).tag == "{http://www.w3.org/2000/svg}svg"
    hr = pd.read_csv(io.BytesIO(archive.read("hazard_ratios.csv")))
    assert hr.loc[hr["covariate"] == "fin", "coef"].item() == pytest.approx(-0.3794222, rel=1e-6)
    logrank = pd.read_csv(io.BytesIO(archive.read("logrank.csv")))
    assert logrank["(O-E)^2/V"].iloc[0] == pytest.approx(3.8375696, rel=1e-6)
    forest = "".join(t for t in ET.fromstring(archive.read("forest.svg")).itertext())
    assert "0.68 (0.47, 1.00)" in forest or "0.68 (0.48, 1.00)" in forest
    assert json.loads(archive.read("survscan_spec.json"))["data"]["name"] == "rossi"
    assert "kaplan_meier.svg" in archive.read("README.txt").decode()


def test_results_draw_no_kaplan_meier_above_the_incidence():
    """bmtcrr's two causes: Results shows the cumulative incidence with Gray's test (R's cuminc:
    2.8623325 by D) and hides the Kaplan-Meier of any event; rossi keeps its Kaplan-Meier."""
    import holoviews as hv
    import panel as pn

    hv.extension("bokeh")
    store = Store()
    store.load_sample("bmtcrr")
    results = ResultsView(store=store, workbench=Workbench(store=store))
    results.open_section(CURVES)
    results.group.value = "D"
    assert results.cif_section.visible and not results.km_section.visible
    assert results.cif_message.object.startswith(
        "Gray's test for cause 1: chi-square = 2.86 on 1 df, p = 0.0907.")
    store.load_sample("rossi")
    assert results.km_section.visible and not results.cif_section.visible
    pn.state.reset()
