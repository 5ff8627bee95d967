"""Splines, interactions and the formula box (app/data/model_terms.py, the Design tab, the Results
section of app/survival/terms.py): the choices and the formula text round-trip; a bad formula
is the engine's message and leaves the design; the fit is engine.fit of the same formula; the
Wald table and the hazard-ratio curves shown are engine.wald_test's and engine.effect_curve's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("panel")

import engine  # noqa: E402
from app.analyses import analysis_file  # noqa: E402
from app.analyses.named import put, snapshot  # noqa: E402
from app.analyses.reopen import apply_spec, rebuild  # noqa: E402
from app.data.loading import DataLoadError  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.survival.adjusted import treatment_of  # noqa: E402
from app.survival.design import DesignView  # noqa: E402
from app.survival.results import ResultsView  # noqa: E402
from app.survival.state import Workbench  # noqa: E402

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
    bench = Workbench(store=store)
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
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
    ("fin + I(age ** 2)", r"not one the Design tab can show.*exported script"),
    ("fin + C(prio, contr.sum)", "not one the Design tab can show"),
    ("fin + poly(age, 4)", r"poly\(age, 4\): the Design tab offers degree 2 or 3"),
    ("fin + poly(age)", "offers degree 2 or 3"),
    ("fin + C(age)", "age has 28 distinct values; a categorical form needs at most 20"),
    ("fin + poly(race, 2)", "race has 2 distinct values; a polynomial of degree 2 needs at "
                            "least 3"),
    ("poly(age, 2) + fin + age:fin", "use the same form in both"),
    ("C(prio) + fin + poly(prio, 2):fin", "use the same form in both"),
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
    bench = Workbench(store=store)
    store.apply_formula(FORMULA)
    kept = bench.fit_job().run()
    cohort = engine.Cohort.from_frame(SAMPLE(), time="week", event="arrest", formula=FORMULA)
    res = engine.fit(cohort, ties="efron")
    pd.testing.assert_series_equal(kept.result.coef, res.coef, rtol=0, atol=1e-10)
    assert kept.result.formula.rhs == "fin + ns(age, df=4) + race + prio + fin:prio"
    new = SAMPLE().head(5)                        # the kept fit rebuilds its columns
    np.testing.assert_allclose(kept.result.design_matrix(new).toarray(),
                               res.design_matrix(new).toarray())


def test_the_wald_table_and_curves_are_the_engines(spline_results):
    store, results = spline_results
    res = results.workbench.fits[-1].result
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
    from app.survival.terms import wald_table

    bench = Workbench(store=store)
    store.apply_formula("fin + rcs(age, 4) + prio")
    res = bench.fit_job().run().result
    table = wald_table(res).set_index("term")
    nonlinear = engine.wald_test(res, names=res.formula.columns_of("rcs(age, 4)")[1:])
    assert list(table.index) == ["rcs(age, 4)", "rcs(age, 4) nonlinear"]
    assert table.loc["rcs(age, 4) nonlinear", "df"] == 2
    assert table.loc["rcs(age, 4) nonlinear", "chi2"] == pytest.approx(nonlinear["statistic"],
                                                                       rel=1e-12)


def test_a_linear_fit_says_where_splines_are_chosen(store):
    import panel as pn

    bench = Workbench(store=store)
    results = ResultsView(store=store, workbench=bench)
    bench.keep(bench.fit_job().run())
    assert "Linear terms only" in results.terms.info.object
    assert results.terms.wald.value.empty and not results.terms.curves.objects
    pn.state.reset()


def test_features_reading_the_covariates_say_what_they_need(store):
    bench = Workbench(store=store)
    store.param.update(forms={"prio": "rcs3"}, cut_points={"prio": [10.0]})
    with pytest.raises(DataLoadError, match="linear terms"):
        bench.fit_job()
    store.param.update(cut_points={}, forms={"age": "ns3"})
    kept = bench.fit_job().run()
    assert treatment_of(kept) == ("fin", "")       # a linear treatment: adjusted curves drawn
    store.treatment = "age"
    assert "linear treatment term" in treatment_of(bench.fit_job().run())[1]


def test_the_spec_reopens_the_design(store):
    bench = Workbench(store=store)
    store.apply_formula(FORMULA)
    spec = store.spec()
    assert spec["design"]["formula"] == "fin + ns(age, df=4) + race + prio + fin:prio"
    other = Store()
    other.load_sample("rossi")
    apply_spec(other, spec)
    assert other.formula_text() == store.formula_text()
    bench.keep(bench.fit_job().run())             # an analysis file refits the same numbers
    omop = OmopState(workbench=bench)
    _, staged, _, differ = rebuild(analysis_file.read(analysis_file.write(
        analysis_file.capture(store, bench, omop, "splines"))))
    assert differ == [] and staged.fits[-1].result.formula.rhs == spec["design"]["formula"]
    saved = snapshot(store, bench, omop)              # a named analysis keeps the design too
    store.apply_formula("fin + age")
    put(store, bench, omop, saved)
    assert store.formula_text() == FORMULA
    other.load_sample("lung")
    assert other.forms == {} and "splines and interactions cleared" in other.reset_note


# --- polynomials and categorical forms --------------------------------------------------------
LUNG = "poly(age, 2) + C(`ph.ecog`) + sex + poly(age, 2):sex"


def test_forms_write_their_terms_and_count_their_columns():
    from app.data.model_terms import form_columns, term_text

    assert [term_text("age", f) for f in ("poly2", "poly3", "categorical")] == [
        "poly(age, 2)", "poly(age, 3)", "C(age)"]
    assert term_text("ph.ecog", "categorical") == "C(`ph.ecog`)"   # not ph's attribute ecog
    assert [form_columns(f, 5) for f in ("linear", "ns4", "rcs4", "poly3", "categorical")] == [
        1, 4, 3, 3, 4]


def renamed_rossi_store():
    """rossi with names a formula writes in backticks."""
    s = Store()
    s.load_frame(SAMPLE().rename(columns={"age": "age at release", "prio": "prior.arrests"}),
                 {"kind": "csv", "name": "rossi.csv", "label": "file: rossi.csv"})
    return s


@pytest.mark.parametrize("forms, interactions", [
    ({"age at release": "poly3", "prior.arrests": "categorical"},
     [["prior.arrests", "fin"], ["age at release", "race"]]),
    ({"age at release": "poly2", "prior.arrests": "poly3"}, [["age at release", "fin"]]),
    ({"prior.arrests": "categorical"}, [["fin", "prior.arrests"]]),
])
def test_polynomial_and_categorical_choices_round_trip(forms, interactions):
    store = renamed_rossi_store()
    store.param.update(covariates=["fin", "age at release", "prior.arrests", "race"],
                       forms=forms, interactions=interactions, strata=["wexp"])
    text = store.formula_text()
    assert "C(`prior.arrests`)" in text or "poly(`prior.arrests`, 3)" in text
    other = renamed_rossi_store()
    other.apply_formula(text)
    assert (other.covariates, other.forms, other.interactions, other.strata) == (
        store.covariates, store.forms, store.interactions, store.strata)
    assert other.formula_text() == text


def test_the_design_offers_the_forms_a_column_can_take():
    store = Store()
    store.load_sample("lung")
    design = DesignView(store=store)
    assert design.form_covariate.options == ["age", "ph.ecog"]    # sex: 2 values
    design.form_covariate.value = "ph.ecog"                         # 4 values: no spline
    assert list(design.form.options.values()) == ["linear", "poly2", "poly3", "categorical"]
    design.form.value = "categorical"
    assert store.forms == {"ph.ecog": "categorical"}
    assert design.formula.value == "age + sex + C(`ph.ecog`)"
    design.form_covariate.value = "age"                             # 42 values: not categorical
    assert "categorical" not in design.form.options.values()
    assert {"ns5", "rcs5", "poly3"} <= set(design.form.options.values())
    with pytest.raises(DataLoadError, match="age has 42 distinct values; a categorical form "
                                            "needs at most 20"):
        store.set_form("age", "categorical")
    design._set_form(type("Event", (), {"new": "categorical"}))      # a notification
    assert store.forms == {"ph.ecog": "categorical"} and design.form.value == "linear"


def orthogonal_polynomial(x, degree):
    """R's poly(x, degree): the QR of the centred Vandermonde matrix, each column scaled to
    unit norm with a positive leading coefficient."""
    q, r = np.linalg.qr(np.vander(x - x.mean(), degree + 1, increasing=True))
    z = q * np.diag(r)
    return (z / np.linalg.norm(z, axis=0))[:, 1:]


def test_a_polynomial_and_categorical_fit_is_lifelines_on_hand_built_columns():
    """The app's fit of a typed formula against lifelines on columns built here: R's poly by
    QR, the ph.ecog levels by pandas' dummies against the first."""
    from lifelines import CoxPHFitter

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("lung")
    store.apply_formula(LUNG)
    res = bench.fit_job(tol=1e-12).run().result
    df = store.data.dropna(subset=["time", "status", "age", "sex", "ph.ecog"])
    P = orthogonal_polynomial(df["age"].to_numpy(float), 2)
    own = pd.DataFrame({"time": df["time"], "event": df["status"], "sex": df["sex"],
                        "poly(age, 2)[1]": P[:, 0], "poly(age, 2)[2]": P[:, 1]})
    own = own.join(pd.get_dummies(df["ph.ecog"], dtype=float, drop_first=True).rename(
        columns=lambda level: f"C(`ph.ecog`)[T.{level}]"))
    for k in (1, 2):
        own[f"poly(age, 2)[{k}]:sex"] = own[f"poly(age, 2)[{k}]"] * own["sex"]
    cph = CoxPHFitter().fit(own, "time", "event", fit_options={"precision": 1e-13})
    assert sorted(cph.params_.index) == sorted(res.coef.index)
    np.testing.assert_allclose(res.coef[cph.params_.index], cph.params_, rtol=1e-6)
    np.testing.assert_allclose(res.se[cph.params_.index], cph.standard_errors_, rtol=1e-6)


def test_a_polynomial_gets_its_wald_test_and_curve_a_categorical_its_wald_test():
    from app.survival.terms import effect_curves, wald_table

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("lung")
    store.apply_formula(LUNG)
    res = bench.fit_job().run().result
    table = wald_table(res).set_index("term")
    assert list(table.index) == ["poly(age, 2)", "C(`ph.ecog`)", "poly(age, 2):sex"]
    assert list(table["df"]) == [2, 3, 2]
    for term, row in table.iterrows():
        assert row["chi2"] == pytest.approx(engine.wald_test(res, term=term)["statistic"],
                                            rel=1e-12)
    curves = effect_curves(res)                                   # age's, not ph.ecog's
    ages = store.data.dropna(subset=["ph.ecog"])["age"]
    expected = engine.effect_curve(res, "age", at=np.linspace(ages.min(), ages.max(), 101))
    assert list(curves) == ["age"]
    pd.testing.assert_frame_equal(curves["age"], expected)


def test_a_term_with_a_column_the_cohort_left_out_tests_the_others():
    """ph.ecog 3 is one patient: its interaction column with sex duplicates its main effect and
    the cohort leaves it out; the interaction's test has the two other columns."""
    from app.survival.terms import wald_table

    store = Store()
    bench = Workbench(store=store)
    store.load_sample("lung")
    store.apply_formula("age + C(`ph.ecog`) + sex + C(`ph.ecog`):sex")
    res = bench.fit_job().run().result
    row = wald_table(res).set_index("term").loc["C(`ph.ecog`):sex"]
    kept = ["C(`ph.ecog`)[T.1.0]:sex", "C(`ph.ecog`)[T.2.0]:sex"]
    assert row["df"] == 2 and "C(`ph.ecog`)[T.3.0]:sex" not in res.coef.index
    assert row["chi2"] == pytest.approx(engine.wald_test(res, names=kept)["statistic"])
