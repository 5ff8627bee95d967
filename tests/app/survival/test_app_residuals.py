"""The Results page of residuals (app/survival/residuals.py): what it shows is the engine's
(engine.functional_form, engine.term_plot and engine.residuals, which tests/engine/inference
checks against R),
the extremes of its tables are the largest rows, a sample of dots keeps every extreme row,
and a fit it cannot serve (a penalised one) is a message, never a traceback."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.survival.residuals import TOP, drawn  # noqa: E402


def test_the_page_shows_the_engines_residuals(rossi_results):
    store, results = rossi_results
    view = results.residuals
    res = results.workbench.fits[-1].result
    assert not view.button.disabled and "age" in view.covariate.options
    assert "fin" not in view.covariate.options          # binary: no form to bend
    assert view.coefficient.value == "fin"              # the treatment first
    view.covariate.value = "age"
    asyncio.run(view.compute())
    assert view.runner.last_outcome == "done" and view.results.visible
    form = engine.functional_form(res, "age")
    np.testing.assert_array_equal(view.shown["form"].to_numpy(), form.to_numpy())
    dfbeta = engine.residuals(res, "dfbeta", columns=["fin"])["fin"].to_numpy()
    shown = view.influence.value
    largest = np.argsort(-np.abs(dfbeta), kind="stable")[:TOP]
    np.testing.assert_array_equal(shown["row"].to_numpy(), largest + 1)
    np.testing.assert_allclose(shown["dfbeta"].to_numpy(), dfbeta[largest], rtol=1e-12)
    np.testing.assert_allclose(shown["dfbeta / SE"].to_numpy(),
                               dfbeta[largest] / res.se["fin"], rtol=1e-12)
    deviance = engine.residuals(res, "deviance").to_numpy()
    worst = np.argsort(-np.abs(deviance), kind="stable")[:TOP]
    np.testing.assert_allclose(view.outliers.value["deviance"].to_numpy(), deviance[worst],
                               rtol=1e-12)
    assert view.figure.object.startswith("<svg") and "Martingale residuals against age" in \
        view.figure.object
    term = engine.term_plot(res, "age")
    pd.testing.assert_frame_equal(view.shown["term"].curve, term.curve)
    pd.testing.assert_frame_equal(view.shown["term"].rows, term.rows, rtol=1e-12)
    assert "The term **age** of age" in view.term_note.object
    assert "Partial residuals and the term age" in view.term_figure.object
    files = view.files()
    assert set(files) == {"residuals.png", "residuals.svg", "functional_form.csv",
                          "influence.csv", "outliers.csv", "term_plot.png", "term_plot.svg",
                          "term_plot.csv"}
    assert files["term_plot.csv"].decode().splitlines()[0] == "age,fit,se,lower,upper"
    assert files["residuals.png"][:4] == b"\x89PNG"
    assert files["functional_form.csv"].decode().splitlines()[0] == "age,martingale,smooth"


def test_the_model_without_covariates(rossi_results):
    """The functional form of the model without covariates (Therneau and Grambsch's first
    look); the outliers' martingale residuals stay the fit's."""
    store, results = rossi_results
    view = results.residuals
    res = results.workbench.fits[-1].result
    view.covariate.value = "age"
    view.model.value = True
    asyncio.run(view.compute())
    want = engine.functional_form(res, "age", null=True)
    np.testing.assert_array_equal(view.shown["form"].to_numpy(), want.to_numpy())
    fitted = engine.residuals(res).to_numpy()
    np.testing.assert_array_equal(view.outliers.value["martingale"].to_numpy(),
                                  fitted[view.outliers.value["row"].to_numpy() - 1])
    assert "Martingale residuals (no covariates) against age" in view.figure.object
    assert view.files()["functional_form.csv"].decode().splitlines()[0] == \
        "age,martingale (no covariates),smooth"


def test_a_splines_variable_is_offered(rossi_results):
    """With age as a spline on the Design tab, the page offers age itself: its form after the
    spline (the basis columns are not offered)."""
    store, results = rossi_results
    store.forms = {"age": "ns3"}
    results.workbench.keep(results.workbench.fit_job().run())
    view = results.residuals
    assert "age" in view.covariate.options
    assert not any(name.startswith("ns(") for name in view.covariate.options)
    view.covariate.value = "age"
    asyncio.run(view.compute())
    res = results.workbench.fits[-1].result
    np.testing.assert_array_equal(view.shown["form"]["smooth"],
                                  engine.functional_form(res, "age")["smooth"])
    assert view.shown["term"].term == "ns(age, df=3)"      # the spline's shape, R's termplot
    pd.testing.assert_frame_equal(view.shown["term"].curve,
                                  engine.term_plot(res, "age").curve)
    assert "Partial residuals and the term ns(age, df=3)" in view.term_figure.object


def test_a_sample_of_dots_keeps_every_extreme_row():
    values = np.random.default_rng(1).normal(size=10_000)
    rows = drawn(values, 500)
    assert rows.size <= 500 and np.all(np.diff(rows) > 0)
    assert set(np.argsort(-np.abs(values))[:TOP]) <= set(rows)
    np.testing.assert_array_equal(drawn(values[:300], 500), np.arange(300))


def test_fits_it_cannot_serve_say_why(rossi_results):
    store, results = rossi_results
    view = results.residuals
    store.penalty = "L2"
    results.workbench.keep(results.workbench.fit_job().run())
    assert view.button.disabled and "unpenalised" in view.info.object
    asyncio.run(view.compute())                  # a click that slipped through: a message
    assert view.runner.last_outcome == "failed" and not view.results.visible
    assert "unpenalised" in view.status.object
