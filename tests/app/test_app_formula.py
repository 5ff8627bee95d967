"""Splines, interactions and the formula box (app/model_terms.py, the Design tab, the Results
section of app/views/terms_view.py): the choices and the formula text round-trip; a bad formula
is the engine's message and leaves the design; the fit is engine.fit of the same formula; the
Wald table and the hazard-ratio curves shown are engine.wald_test's and engine.effect_curve's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.loading import DataLoadError  # noqa: E402
from app.named_analyses import put, snapshot  # noqa: E402
from app import analysis_file  # noqa: E402
from app.reopen import apply_spec, rebuild  # noqa: E402
from app.store import Store  # noqa: E402
from app.views.adjusted_view import treatment_of  # noqa: E402
from app.views.design import DesignView  # noqa: E402
from app.views.results import ResultsView  # noqa: E402

FORMULA = "fin + ns(age, df=4) + race + prio + fin:prio + strata(wexp)"


def SAMPLE():
    from engine import datasets

    return datasets.load_rossi()


@pytest.fixture
def store():
    s = Store()
    s.load_sample("rossi")
    return s


@pytest.fixture
def spline_results(store):
    import holoviews as hv
    import panel as pn

    hv.extension("bokeh")
    store.apply_formula(FORMULA)
    results = ResultsView(store=store)
    store.keep(store.fit_job().run())
    yield store, results
    pn.state.reset()


def test_choices_write_the_formula_and_read_it_back(store):
    design = DesignView(store=store)
    design.form_covariate.value = "age"
    design.form.value = "rcs4"
    design.pair_a.value, design.pair_b.value = "fin", "prio"
    design._add_pair()
    store.strata = ["mar"]
    text = "fin + rcs(age, 4) + race + wexp + paro + prio + fin:prio + strata(mar)"
    assert store.formula_text() == text and design.formula.value == text
    other = Store()
    other.load_sample("rossi")
    other.apply_formula(text)
    assert (other.covariates, other.forms, other.interactions, other.strata) == (
        store.covariates, store.forms, store.interactions, store.strata)


def test_spline_forms_are_offered_for_columns_with_enough_values(store):
    design = DesignView(store=store)
    offered = design.form_covariate.options
    assert "age" in offered and "prio" in offered          # 30 and 17 distinct values
    assert not {"fin", "race", "wexp", "paro"} & set(offered)   # 0/1: a spline cannot be fitted


def test_a_typed_formula_sets_the_choices(store):
    design = DesignView(store=store)
    design.formula.value = "Surv(week, arrest) ~ ns(age, df=3) * fin + prio + strata(race)"
    design._apply_formula()
    assert store.covariates == ["age", "fin", "prio"] and store.strata == ["race"]
    assert store.forms == {"age": "ns3"} and store.interactions == [["age", "fin"]]
    assert design.formula.value == "ns(age, df=3) + fin + prio + ns(age, df=3):fin + strata(race)"
    design.form_covariate.value = "age"
    assert design.form.value == "ns3"
    store.covariates = ["fin", "prio"]            # age leaves: its spline and interaction too
    assert store.forms == {} and store.interactions == []


@pytest.mark.parametrize("text, message", [
    ("fin + ns(age, df=4", "cannot be parsed"),
    ("fin + agee", "Did you mean 'age'"),
    ("fin:prio + age", "needs 'fin' as a main effect"),
    ("fin + poly(age, 2)", "not one the Design tab can show"),
    ("fin + ns(age, df=9)", "3 to 5"),
    ("Surv(week, fin) ~ age", "differs from 'fin'"),
    ("week + fin", "both as time and as covariate"),
    ("fin + ns(paro, df=3)", "too few for df=3"),
])
def test_a_bad_formula_is_the_message_and_keeps_the_design(store, text, message):
    store.apply_formula(FORMULA)
    before = (store.covariates, store.forms, store.interactions, store.strata)
    with pytest.raises((engine.CohortError, DataLoadError), match=message):
        store.apply_formula(text)
    assert (store.covariates, store.forms, store.interactions, store.strata) == before
    design = DesignView(store=store)
    design.formula.value = text
    design._apply_formula()                       # a notification, no exception
    assert (store.covariates, store.forms, store.interactions, store.strata) == before


def test_a_spline_fit_is_engine_fit_of_the_formula(store):
    store.apply_formula(FORMULA)
    kept = store.fit_job().run()
    cohort = engine.Cohort.from_frame(SAMPLE(), time="week", event="arrest", formula=FORMULA)
    res = engine.fit(cohort, ties="efron")
    pd.testing.assert_series_equal(kept.result.coef, res.coef, rtol=0, atol=1e-10)
    assert kept.result.formula.rhs == "fin + ns(age, df=4) + race + prio + fin:prio"
    new = SAMPLE().head(5)                        # the kept fit rebuilds its columns
    np.testing.assert_allclose(kept.result.design_matrix(new).toarray(),
                               res.design_matrix(new).toarray())


def test_the_wald_table_and_curves_are_the_engines(spline_results):
    store, results = spline_results
    res = store.fits[-1].result
    wald = results.terms.wald.value
    assert list(wald["term"]) == ["ns(age, df=4)", "fin:prio"]
    for _, row in wald.iterrows():
        expected = engine.wald_test(res, term=row["term"])
        assert row["chi2"] == pytest.approx(expected["statistic"], rel=1e-12)
        assert (row["df"], row["p"]) == (expected["df"], pytest.approx(expected["p"]))
    (pane,) = results.terms.curves.objects
    ages = SAMPLE()["age"]
    expected = engine.effect_curve(res, "age", at=np.linspace(ages.min(), ages.max(), 101))
    curve = pane.object.get(1)
    np.testing.assert_allclose(curve.dimension_values(0), expected["age"].astype(float))
    np.testing.assert_allclose(curve.dimension_values(1), expected["hr"], rtol=1e-12)
    band = pane.object.get(0)
    np.testing.assert_allclose(band.dimension_values(2), expected["upper"], rtol=1e-12)
    assert pane.object.get(3).data == ages.median()     # the reference line: HR 1 there
    files = results.terms.files()                                          # the report
    assert set(files) == {"wald_tests.csv", "hr_curve_age.csv", "hr_curve_age.png",
                          "hr_curve_age.svg"}
    assert files["hr_curve_age.png"].startswith(b"\x89PNG") and b"reference" in files[
        "hr_curve_age.svg"]


def test_a_restricted_cubic_spline_has_its_test_of_linearity(store):
    from app.views.terms_view import wald_table

    store.apply_formula("fin + rcs(age, 4) + prio")
    res = store.fit_job().run().result
    table = wald_table(res).set_index("term")
    nonlinear = engine.wald_test(res, names=res.formula.columns_of("rcs(age, 4)")[1:])
    assert list(table.index) == ["rcs(age, 4)", "rcs(age, 4) nonlinear"]
    assert table.loc["rcs(age, 4) nonlinear", "df"] == 2
    assert table.loc["rcs(age, 4) nonlinear", "chi2"] == pytest.approx(nonlinear["statistic"],
                                                                       rel=1e-12)


def test_a_linear_fit_says_where_splines_are_chosen(store):
    import panel as pn

    results = ResultsView(store=store)
    store.keep(store.fit_job().run())
    assert "Linear terms only" in results.terms.info.object
    assert results.terms.wald.value.empty and not results.terms.curves.objects
    pn.state.reset()


def test_features_reading_the_covariates_say_what_they_need(store):
    store.param.update(forms={"prio": "rcs3"}, cut_points={"prio": [10.0]})
    with pytest.raises(DataLoadError, match="linear terms"):
        store.fit_job()
    store.param.update(cut_points={}, forms={"age": "ns3"})
    kept = store.fit_job().run()
    assert treatment_of(kept) == ("fin", "")       # a linear treatment: adjusted curves drawn
    store.treatment = "age"
    assert "linear treatment term" in treatment_of(store.fit_job().run())[1]


def test_the_spec_reopens_the_design(store):
    store.apply_formula(FORMULA)
    spec = store.spec()
    assert spec["design"]["formula"] == "fin + ns(age, df=4) + race + prio + fin:prio"
    other = Store()
    other.load_sample("rossi")
    apply_spec(other, spec)
    assert other.formula_text() == store.formula_text()
    store.keep(store.fit_job().run())             # an analysis file refits the same numbers
    staged, differ = rebuild(analysis_file.read(analysis_file.write(
        analysis_file.capture(store, "splines"))))
    assert differ == [] and staged.fits[-1].result.formula.rhs == spec["design"]["formula"]
    saved = snapshot(store)                       # a named analysis keeps the design too
    store.apply_formula("fin + age")
    put(store, saved)
    assert store.formula_text() == FORMULA
    other.load_sample("lung")
    assert other.forms == {} and "splines and interactions cleared" in other.reset_note
