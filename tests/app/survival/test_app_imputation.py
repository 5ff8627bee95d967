"""Results' Missing data page (app/survival/imputation.py): the Data tab's Cox design on R's
lung data imputed and pooled is engine.impute(...).fit(...) on the same rows (whose numbers
tests/engine/missing checks against statsmodels and the definitions), beside the shown
complete-case fit; a design it cannot impute is a message with the button off, never a
traceback; the report folder carries its tables."""

from __future__ import annotations

import asyncio
import contextlib
import io
import zipfile

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.export.view import ExportView  # noqa: E402
from app.survival.results import ResultsView  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

COVARIATES = ["age", "sex", "ph.ecog", "wt.loss"]


@pytest.fixture
def lung():
    import panel as pn

    store = Store()
    store.load_sample("lung")
    store.covariates = COVARIATES
    bench = Workbench(store=store)
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())           # the complete-case fit (the sample drops)
    yield store, bench, results
    pn.state.reset()


def test_pooled_ratios_are_the_engines_beside_the_complete_cases(lung):
    store, bench, results = lung
    view = results.imputation
    assert not view.compute.disabled
    assert "ph.ecog 1, wt.loss 14" in view.info.object and "213 of 228" in view.info.object
    view.m.value, view.seed.value = 4, 7
    asyncio.run(view.run())
    assert view.runner.last_outcome == "done"
    data = engine.datasets.load_lung()
    want = engine.impute(data, "time", "status", columns=["ph.ecog", "wt.loss"],
                         predictors=["age", "sex"], m=4, seed=7).fit(
        covariates=COVARIATES, ties=store.ties).summary
    shown = view.pooled.value.set_index("covariate")
    np.testing.assert_allclose(shown["HR"], want["hr"], rtol=1e-12)
    np.testing.assert_allclose(shown[["lower", "upper", "fmi"]].to_numpy(),
                               want[["hr_lower", "hr_upper", "fmi"]].to_numpy(), rtol=1e-12)
    complete = bench.fits[-1]
    column = f"{complete.name} HR (213 rows)"
    np.testing.assert_allclose(shown[column], complete.summary["hr"], rtol=1e-12)
    assert set(view.columns.value["column"]) == {"ph.ecog", "wt.loss"}
    export = ExportView(store=store, workbench=bench, results=results)
    archive = zipfile.ZipFile(io.BytesIO(export.report_bytes()))
    pooled = pd.read_csv(archive.open("multiple_imputation.csv"))
    assert list(pooled["covariate"]) == COVARIATES
    assert "imputed_columns.csv" in archive.namelist()
    script = export.script_code()
    assert "imp = engine.impute(df, 'time', 'status'" in script
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(script, "survscan_analysis.py", "exec"), namespace)
    np.testing.assert_allclose(namespace["pooled"].summary["hr"], shown["HR"], rtol=1e-12)
    store.load_sample("rossi")                  # other data: the lung tables go
    assert view.pooled.value.empty and not view.script_lines() and not view.files()
    assert "nothing to impute" in view.info.object


@pytest.mark.parametrize("change, says", [
    (lambda s: setattr(s, "penalty", "L2"), "no penalty"),
    (lambda s: setattr(s, "model", "poisson"), "a Cox model"),
    (lambda s: setattr(s, "covariates", ["age", "sex"]), "nothing to impute"),
])
def test_a_design_it_cannot_impute_is_said(lung, change, says):
    store, _, results = lung
    change(store)
    view = results.imputation
    assert says in view.info.object and view.compute.disabled
    asyncio.run(view.run())                     # a click that slipped through: refused
    assert view.pooled.value.empty


def test_strata_enter_the_imputation_model(lung):
    store, bench, results = lung
    store.strata = ["sex"]
    view = results.imputation
    view.m.value, view.seed.value = 3, 2
    asyncio.run(view.run())
    assert view.runner.last_outcome == "done"
    covariates = [c for c in COVARIATES if c != "sex"]
    want = engine.impute(engine.datasets.load_lung(), "time", "status",
                         columns=["ph.ecog", "wt.loss"], predictors=["age"], strata=["sex"],
                         m=3, seed=2).fit(covariates=covariates, strata=["sex"],
                                          ties=store.ties).summary
    np.testing.assert_allclose(view.pooled.value.set_index("covariate")["HR"], want["hr"],
                               rtol=1e-12)
    assert "strata=['sex']" in view.script_lines()[3]
