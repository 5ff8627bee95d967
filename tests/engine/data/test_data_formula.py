"""The formula front door: columns, fits against lifelines' formula fits, new data, bad input."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from lifelines import CoxPHFitter

import engine
from engine.core.errors import CohortError
from formula_data import frame, harrell_rcs


def fit_both(df, formula, lifelines_formula=None, strata=None, extra=None):
    cohort = engine.Cohort.from_frame(df, "time", "event", formula=formula, strata=strata)
    res = engine.fit(cohort, ties="efron", tol=1e-13)
    data = df if extra is None else pd.concat([df, extra], axis=1)
    cph = CoxPHFitter().fit(data, "time", "event", formula=lifelines_formula or formula,
                            strata=strata, fit_options={"precision": 1e-13})
    return cohort, res, cph


def test_interactions_and_categories_match_lifelines_formula_fit():
    df = frame()
    formula = "age + sex * treat + C(site) + poly(bmi, 2)"
    cohort, res, cph = fit_both(df, formula)
    assert sp.isspmatrix_csc(cohort.X)
    assert cohort.names == ["age", "sex[T.M]", "treat", "C(site)[T.south]", "C(site)[T.west]",
                            "poly(bmi, 2)[1]", "poly(bmi, 2)[2]", "sex[T.M]:treat"]
    assert set(cph.params_.index) == set(cohort.names)
    np.testing.assert_allclose(res.coef[cph.params_.index], cph.params_, rtol=1e-6)
    np.testing.assert_allclose(res.se[cph.params_.index], cph.standard_errors_, rtol=1e-6)


def test_surv_left_side_and_strata_term_match_lifelines_strata_fit():
    df = frame()
    cohort = engine.Cohort.from_frame(df, formula="Surv(time, event) ~ age + treat + "
                                                  "strata(site)")
    assert cohort.strata_columns == ("site",) and cohort.names == ["age", "treat"]
    res = engine.fit(cohort, ties="efron", tol=1e-13)
    cph = CoxPHFitter().fit(df[["time", "event", "age", "treat", "site"]], "time", "event",
                            strata=["site"], fit_options={"precision": 1e-13})
    np.testing.assert_allclose(res.coef[cph.params_.index], cph.params_, rtol=1e-6)


def test_rcs_term_matches_lifelines_fit_on_harrells_columns():
    df = frame()
    knots = np.quantile(df.bmi, [0.05, 0.35, 0.65, 0.95])   # Harrell's 4 knots, n >= 100
    own = pd.DataFrame(harrell_rcs(df.bmi.to_numpy(), knots), columns=["b0", "b1", "b2"])
    cohort, res, cph = fit_both(df, "age + treat + rcs(bmi, 4)", "age + treat + b0 + b1 + b2",
                                extra=own)
    assert cohort.names[2:] == ["rcs(bmi, 4)[x]", "rcs(bmi, 4)[x']", "rcs(bmi, 4)[x'']"]
    ours = res.coef[["age", "treat", *cohort.names[2:]]].to_numpy()
    theirs = cph.params_[["age", "treat", "b0", "b1", "b2"]].to_numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_design_matrix_of_newdata_rebuilds_the_fitted_columns():
    df = frame()
    cohort = engine.Cohort.from_frame(df, "time", "event",
                                      formula="age + sex * treat + ns(bmi, df=4) + C(site)")
    res = engine.fit(cohort)
    rows = df.iloc[[5, 0, 17]]
    new = cohort.design_matrix(rows)
    assert sp.isspmatrix_csc(new) and new.shape == (3, cohort.p)
    np.testing.assert_allclose(new.toarray(), cohort.X[[5, 0, 17]].toarray(), rtol=1e-12)
    np.testing.assert_allclose(res.design_matrix(rows).toarray(), new.toarray())
    one = cohort.design_matrix(rows.iloc[[1]])       # one row: knots and levels kept
    np.testing.assert_allclose(one.toarray(), cohort.X[[0]].toarray(), rtol=1e-12)


def test_formula_columns_equal_the_covariates_lists_entry_for_entry():
    """The intercept is cut off formulaic's CSC arrays, not copied out by a slice: the same
    canonical matrix as the covariates list builds (numeric columns, a 0/1 one, a zero)."""
    df = frame().assign(zero=0.0)
    df.loc[3, "zero"] = 2.5
    columns = ["age", "treat", "zero", "bmi"]
    by_list = engine.Cohort.from_frame(df, "time", "event", covariates=columns)
    by_formula = engine.Cohort.from_frame(df, "time", "event", formula=" + ".join(columns))
    X, Y = by_list.X, by_formula.X
    assert by_formula.names == columns and Y.shape == X.shape and Y.indptr[0] == 0
    assert Y.has_canonical_format
    for a, b in zip((X.indptr, X.indices, X.data), (Y.indptr, Y.indices, Y.data)):
        np.testing.assert_array_equal(a, b)


def test_covariates_list_is_unchanged_and_has_no_design_recipe():
    df = frame()
    cohort = engine.Cohort.from_frame(df, "time", "event", covariates=["age", "sex"])
    assert cohort.names == ["age", "sex[M]"] and cohort.formula is None
    with pytest.raises(CohortError, match="not built from a formula"):
        cohort.design_matrix(df)


def test_missing_rows_are_dropped_when_asked():
    df = frame()
    df.loc[[3, 9], "bmi"] = np.nan
    with pytest.raises(CohortError, match="'bmi'"):
        engine.Cohort.from_frame(df, "time", "event", formula="age + ns(bmi, df=3)")
    cohort = engine.Cohort.from_frame(df, "time", "event", formula="age + ns(bmi, df=3)",
                                      missing="drop")
    assert cohort.n == len(df) - 2 and cohort.dropped == {"bmi": 2}


@pytest.mark.parametrize("formula, match", [
    ("age + ns(bmi, df=4", "cannot be parsed"),
    ("age + + ", "cannot be parsed"),
    ("age + bmii", r"'bmii'.*Did you mean 'bmi'"),
    ("Surv(time) ~ age", "not Surv"),
    ("strata(site):age + treat", "crosses strata"),
    ("ns(bmi)", "give df="),
    ("rcs(sex, 3)", r"rcs\(sex, 3\)"),
    ("strata(site)", "no covariate terms"),
    ("age | bmi", "more than one right-hand part"),
])
def test_bad_formulas_name_the_term_and_the_fix(formula, match):
    with pytest.raises(CohortError, match=match):
        engine.Cohort.from_frame(frame(), "time", "event", formula=formula)


def test_formula_and_arguments_that_disagree_are_refused():
    with pytest.raises(CohortError, match="differs"):
        engine.Cohort.from_frame(frame(), "age", "event", formula="Surv(time, event) ~ bmi")
    with pytest.raises(CohortError, match="not both"):
        engine.Cohort.from_frame(frame(), "time", "event", covariates=["age"], formula="bmi")
    with pytest.raises(CohortError, match="needs event="):
        engine.Cohort.from_frame(frame(), formula="age + bmi")


def test_bad_newdata_names_the_term_and_the_fix():
    df = frame()
    cohort = engine.Cohort.from_frame(df, "time", "event",
                                      formula="ns(bmi, df=3) + C(site) + rcs(age, 3)")
    new = df.iloc[:4].copy()
    new.loc[new.index[2], "bmi"] = df.bmi.max() + 5
    with pytest.raises(CohortError, match=r"ns\(bmi, df=3\).*outside the range.*row 3.*"
                                          r"extrapolate"):
        cohort.design_matrix(new)
    new = df.iloc[:4].copy()
    new["age"] = df.age.min() - 1
    with pytest.raises(CohortError, match=r"rcs\(age, 3\).*extrapolate"):
        cohort.design_matrix(new)
    new = df.iloc[:4].copy()
    new.loc[new.index[0], "site"] = "east"
    with pytest.raises(CohortError, match=r"'site'.*C\(site\).*east.*Recode"):
        cohort.design_matrix(new)
    numeric = engine.Cohort.from_frame(df, "time", "event", formula="age + C(treat)")
    with pytest.raises(CohortError, match=r"not fitted on.*Recode"):
        numeric.design_matrix(df.iloc[:3].assign(treat=2))
    with pytest.raises(CohortError, match=r"'bmi'.*not in the data"):
        cohort.design_matrix(df.drop(columns="bmi"))
    new = df.iloc[:4].copy()
    new.loc[new.index[1], "age"] = np.nan
    with pytest.raises(CohortError, match="'age'"):
        cohort.design_matrix(new)


def test_a_formula_cohort_pickles_for_process_pools():
    import pickle

    df = frame()
    cohort = engine.Cohort.from_frame(df, "time", "event",
                                      formula="sex * treat + ns(bmi, df=3) + C(site)")
    again = pickle.loads(pickle.dumps(cohort))
    np.testing.assert_array_equal(again.design_matrix(df.iloc[:5]).toarray(),
                                  cohort.X[:5].toarray())


def test_counting_process_surv_with_entry_times():
    df = frame(n=50)
    df["id"] = np.arange(50)
    df["entry"] = df["time"] / 4
    cohort = engine.Cohort.from_frame(df, id="id", formula="Surv(entry, time, event) ~ age")
    np.testing.assert_array_equal(cohort.start, df["entry"].to_numpy())
    np.testing.assert_array_equal(cohort.time, df["time"].to_numpy())
    assert cohort.names == ["age"] and cohort.source["formula"].startswith("Surv(entry")


def test_boundary_knots_given_widen_the_range_new_data_may_take():
    df = frame()
    lo, hi = df.bmi.min() - 5, df.bmi.max() + 5
    cohort = engine.Cohort.from_frame(df, "time", "event",
                                      formula=f"ns(bmi, df=3, boundary_knots=({lo}, {hi}))")
    inside = cohort.design_matrix(pd.DataFrame({"bmi": [lo, hi]})).toarray()
    assert np.all(np.isfinite(inside))
    with pytest.raises(CohortError, match="outside the range"):
        cohort.design_matrix(pd.DataFrame({"bmi": [hi + 1]}))


def test_terms_read_their_columns_through_polynomials_and_dotted_names():
    """formulaic's required_variables loses poly's argument and cuts ph.ecog at its dot; the
    formula's reads, variables and ranges name the data columns."""
    df = frame().rename(columns={"site": "site.name"})
    cohort = engine.Cohort.from_frame(
        df, "time", "event",
        formula="poly(age, 2) + C(`site.name`) + `site.name`:treat + np.log(bmi)")
    formula = cohort.formula
    assert formula.reads == {"poly(age, 2)": {"age"}, "C(`site.name`)": {"site.name"},
                             "site.name:treat": {"site.name", "treat"},
                             "np.log(bmi)": {"bmi"}}
    assert formula.variables == ["age", "bmi", "site.name", "treat"]
    assert formula.ranges["age"] == (df.age.min(), df.age.max()) and "site.name" not in (
        formula.ranges)
    with pytest.raises(CohortError, match=r"'age'.*poly\(age, 2\).*not in the data"):
        cohort.design_matrix(df.drop(columns="age"))


def test_a_dotted_name_inside_a_transform_asks_for_backticks():
    """Inside C(), poly() or ns() a dot ends a name (formulaic reads ph.ecog as ph's
    attribute): the error names the column and writes the term with backticks."""
    df = frame().rename(columns={"site": "site.name", "bmi": "body.mass"})
    with pytest.raises(CohortError, match=r"C\(site\.name\).*'site' is not a column.*"
                                          r"'site\.name'.*backticks, C\(`site\.name`\)"):
        engine.Cohort.from_frame(df, "time", "event", formula="age + C(site.name)")
    with pytest.raises(CohortError, match=r"backticks, ns\(`body\.mass`, df=3\)"):
        engine.Cohort.from_frame(df, "time", "event", formula="age + ns(body.mass, df=3)")


def test_names_in_backticks_stay_quoted_in_the_parsed_formula():
    """formulaic's term label drops the backticks of `body mass`; the formula's rhs keeps
    them, so it is parsed again (build, a reader of ``rhs``), and a stratum loses them."""
    df = frame().rename(columns={"bmi": "body mass", "site": "site name"})
    cohort = engine.Cohort.from_frame(
        df, "time", "event", formula="`body mass` + treat + `body mass`:treat + "
                                     "strata(`site name`)")
    assert cohort.formula.rhs == "`body mass` + treat + `body mass`:treat"
    assert cohort.names == ["body mass", "treat", "body mass:treat"]
    assert cohort.strata_columns == ("site name",)
    assert cohort.formula.reads["body mass:treat"] == {"body mass", "treat"}


def test_a_python_expression_term_is_kept():
    """{age ** 2} is a Python expression; written back unbraced it is the formula power
    age ** 2, which is age again, and the term was silently lost."""
    df = frame()
    cohort, res, cph = fit_both(df, "age + {age ** 2} + {np.log(age) + 1}")
    assert cohort.names == ["age", "age ** 2", "np.log(age) + 1"]
    X = cohort.X.toarray()
    np.testing.assert_allclose(X[:, 1], df["age"] ** 2)
    np.testing.assert_allclose(X[:, 2], np.log(df["age"]) + 1)
    np.testing.assert_allclose(res.coef[cph.params_.index], cph.params_, rtol=1e-6)


def test_the_engines_materializer_builds_formulaics_matrix():
    """engine.data.sparse_columns writes numeric columns and the intercept straight into CSC:
    the same matrix and names as formulaic's own pandas materializer, on numbers with zeros,
    integers, booleans, text, an interaction and a spline, and again on new rows."""
    from formulaic import Formula

    from engine.data.formula import CONTEXT
    from engine.data.sparse_columns import SparseColumns

    df = frame().assign(count=lambda d: (d["age"] % 3).astype(int), zero=0.0,
                        flag=lambda d: d["treat"] > 0)
    formula = "1 + age + count + zero + flag + sex * treat + C(site) + ns(bmi, df=3)"
    theirs = Formula(formula).get_model_matrix(df, output="sparse", context=CONTEXT)
    ours = Formula(formula).get_model_matrix(df, output="sparse", context=CONTEXT,
                                             materializer=SparseColumns)
    assert list(ours.model_spec.column_names) == list(theirs.model_spec.column_names)
    a, b = sp.csc_matrix(theirs.__wrapped__), sp.csc_matrix(ours.__wrapped__)
    assert b.has_canonical_format and a.nnz == b.nnz and (a != b).nnz == 0
    rows = df.iloc[[4, 1]]
    np.testing.assert_array_equal(
        ours.model_spec.get_model_matrix(rows, context=CONTEXT).toarray(),
        theirs.model_spec.get_model_matrix(rows, context=CONTEXT).toarray())
