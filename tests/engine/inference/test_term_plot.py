"""engine.term_plot: R's termplot(fit, partial.resid = TRUE, se = TRUE) of a Cox fit.  The
curves against R 4.2.2 / survival 3.5-3's termplot(plot = FALSE) (tests/data/r_predict_terms.R
writes tests/data/r_termplot.csv) for a natural spline, a 0/1 column and a column that also
enters an interaction; the partial residuals against engine.residuals(res, "partial") (itself
R's, tests/engine/inference/test_partial_residuals.py) and by definition where several terms
read the variable; the refusals name the way out."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine

R = pd.read_csv(Path(__file__).parents[2] / "data" / "r_termplot.csv")
FORMULA = "fin + ns(age, df=3) + prio + fin:prio"


@pytest.fixture(scope="module")
def res(rossi):
    return engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest", formula=FORMULA),
                      ties="efron", tol=1e-12)


@pytest.mark.parametrize("variable, term", [("age", "ns(age, df=3)"), ("fin", "fin"),
                                            ("prio", "prio")])
def test_curves_against_r_termplot(rossi, res, variable, term):
    plot = engine.term_plot(res, variable)
    assert plot.term == term
    oracle = R[R["term"] == variable]
    np.testing.assert_array_equal(plot.curve["x"], oracle["x"])
    scale = np.abs(oracle["y"]).max()
    np.testing.assert_allclose(plot.curve["fit"], oracle["y"], rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(plot.curve["se"], oracle["se"], rtol=1e-6, atol=1e-9)
    z = 1.959963984540054
    np.testing.assert_allclose(plot.curve["upper"] - plot.curve["fit"], z * plot.curve["se"])
    partial = engine.residuals(res, "partial", columns=[term])[term]
    np.testing.assert_allclose(plot.rows["partial"], partial, atol=1e-12)
    given = engine.term_plot(res, variable, martingale=engine.residuals(res).to_numpy())
    pd.testing.assert_frame_equal(given.rows, plot.rows)
    np.testing.assert_array_equal(plot.rows["x"], rossi[variable].to_numpy(float))


def test_several_terms_of_one_variable_are_drawn_as_one(rossi):
    fit = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              formula="fin + age + {age ** 2}"), ties="efron")
    plot = engine.term_plot(fit, "age")
    assert plot.term == "age + age ** 2"
    b = fit.coef
    x = plot.curve["x"].to_numpy()
    age = rossi["age"].to_numpy(float)
    expected = b["age"] * (x - age.mean()) + b["age ** 2"] * (x ** 2 - (age ** 2).mean())
    np.testing.assert_allclose(plot.curve["fit"], expected, atol=1e-12)
    V = fit.cov.loc[["age", "age ** 2"], ["age", "age ** 2"]].to_numpy()
    d = np.column_stack([x - age.mean(), x ** 2 - (age ** 2).mean()])
    np.testing.assert_allclose(plot.curve["se"], np.sqrt(np.einsum("mk,kl,ml->m", d, V, d)))
    martingale = engine.residuals(fit).to_numpy()
    np.testing.assert_allclose(plot.rows["partial"], martingale
                               + np.interp(age, x, plot.curve["fit"]), atol=1e-12)


def test_a_fit_of_covariate_columns(rossi):
    fit = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              covariates=["fin", "age", "prio"]), ties="efron")
    plot = engine.term_plot(fit, "age")
    terms = fit.predict(type="terms")
    first = np.unique(rossi["age"].to_numpy(float), return_index=True)[1]
    np.testing.assert_allclose(plot.curve["fit"], terms[("fit", "age")].to_numpy()[first])
    np.testing.assert_allclose(plot.curve["se"], terms[("se", "age")].to_numpy()[first])


def test_refusals_name_the_way_out(rossi, res):
    with pytest.raises(ValueError, match="its variables are"):
        engine.term_plot(res, "race")
    both = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                               formula="fin + age:prio"), ties="efron")
    with pytest.raises(ValueError, match="enters only through.*effect_curve"):
        engine.term_plot(both, "age")
    cut = engine.fit(engine.Cohort.from_frame(rossi, "week", "arrest",
                                              covariates=["fin", "age"]), cut_points={"fin": [20]})
    with pytest.raises(ValueError, match="cut points"):
        engine.term_plot(cut, "age")
    with pytest.raises(ValueError, match="level"):
        engine.term_plot(res, "age", level=1.5)
    with pytest.raises(ValueError, match="one residual per fitted row"):
        engine.term_plot(res, "age", martingale=np.zeros(3))
