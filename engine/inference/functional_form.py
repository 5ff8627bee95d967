"""The functional form of a covariate in a Cox fit: its martingale residuals against the
covariate with R's lowess smooth (Therneau, Grambsch and Fleming 1990, "Martingale-based
residuals for survival models", Biometrika 77:147-160; Therneau and Grambsch 2000, "Modeling
Survival Data", section 5.2).  A flat smooth says the covariate's form in the fit is right; a
bend says where (a threshold, a U shape: a spline term, ns(x, df=4), may fit it).  Against a
covariate left out of the fit, the smooth approximates the form it would enter with; the
residuals of the model without covariates (``null=True``, the same strata, entry times,
weights and ties) show each covariate's form before any is chosen, Therneau and Grambsch's
first look (survminer's ggcoxfunctional).

The smooth is R's ``lowess`` (engine.inference.lowess: Cleveland's algorithm with R's
defaults, f = 2/3, 3 robustness iterations, delta = 1% of the range), on every row.

Once a form is chosen, ``term_plot`` shows how well it fits, as R's ``termplot(fit,
partial.resid = TRUE, se = TRUE)``: the part of the linear predictor of the variable's term (a
spline's whole basis) with its pointwise band, and the partial residuals (the martingale
residual plus that part) scattered around it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats

from .lowess import lowess
from .ph_test import fitted_cohort
from .residuals import residuals
from ..data.cohort import Cohort
from ..regression.fit import fit
from ..regression.predict import column_centres, term_columns, term_part


def functional_form(res, covariate, cohort=None, null: bool = False, frac: float = 2 / 3,
                    iterations: int = 3) -> pd.DataFrame:
    """Martingale residuals of the Cox fit ``res`` against ``covariate`` with their lowess
    smooth, one row per row of the cohort in its order (a fit with cut points: per row before
    the split, its episodes' residuals summed).

    covariate : a covariate name of the cohort (or a variable its formula reads through a
        spline or a polynomial: has the spline caught its form?), or its values (one per
        row): a covariate left out of the fit, to see whether and in what form to add it
    cohort : the engine.Cohort that was fitted (before its cut points); default the one the
        FitResult keeps
    null : the residuals of the model without covariates instead of the fit's
    frac, iterations : lowess's span (R's f) and robustness iterations (R's iter)

    Returns a DataFrame: x (the covariate), martingale, smooth (lowess at x).
    """
    if not 0 < frac <= 1 or int(iterations) != iterations or iterations < 0:
        raise ValueError(f"frac must be in (0, 1] and iterations a whole number >= 0, got "
                         f"{frac} and {iterations}")
    if null:
        rows = _subjects(res, cohort)
        empty = Cohort.from_arrays(rows.time, rows.event, sp.csc_matrix((rows.n, 0)),
                                   strata=rows.strata, start=rows.start, id=rows.id,
                                   weights=rows.weights)
        martingale = residuals(fit(empty, ties=res.spec["ties"]), "martingale").to_numpy()
    else:
        martingale = residuals(res, "martingale", cohort).to_numpy()
    x = _values(res, covariate, cohort, martingale.size)
    smooth = lowess(x, martingale, frac, int(iterations))
    return pd.DataFrame({"x": x, "martingale": martingale, "smooth": smooth})


@dataclass
class TermPlot:
    """What R's termplot draws for one variable of a Cox fit.

    term : the fit's term(s) that read only the variable ("ns(age, df=3)"; terms joined by
        " + " when several do, as "age + I(age ** 2)")
    rows : DataFrame, one row per fitted row: x (the variable), partial (the martingale
        residual plus the term's part of the linear predictor: R's partial residual)
    curve : DataFrame at each distinct x, ascending: x, fit (the term's part of the linear
        predictor, centred at R's fit$means: predict(type = "terms")), se, lower, upper (the
        pointwise band at ``level``; NaN for a penalised fit)
    """

    term: str
    rows: pd.DataFrame
    curve: pd.DataFrame


def term_plot(res, variable: str, level: float = 0.95, martingale=None) -> TermPlot:
    """The term of ``variable`` in the Cox fit ``res`` against the variable, with its band and
    the partial residuals (R's termplot(fit, terms, partial.resid = TRUE, se = TRUE)): the
    curve is the shape the fit gave the variable (a spline's dose-response), the residuals'
    scatter around it whether the data agree.

    variable : a covariate of the fit, or a variable its formula reads through a spline or a
        polynomial; its term(s) must read no other variable (an interaction's part depends on
        the other one: see engine.effect_curve)
    martingale : the fit's martingale residuals when the caller has them (functional_form's
        column of the fit's own, not the null model's): 0.8 s of 1.0 s at 10^6 rows
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if res.spec.get("cut_points"):
        raise ValueError("a fit with cut points has a coefficient per interval: its terms "
                         "depend on time. Take the term plot of the fit without cut points.")
    labels, cols = _terms_of(res, variable)
    rows = _subjects(res, None)
    x = _values(res, variable, None, rows.n)
    if martingale is None:
        martingale = residuals(res, "martingale").to_numpy()
    elif np.shape(martingale) != (rows.n,):
        raise ValueError(f"martingale must hold one residual per fitted row ({rows.n}), got "
                         f"shape {np.shape(martingale)}")
    # the term reads the variable alone: its part at each distinct value serves every row
    xs, first, at = np.unique(x, return_index=True, return_inverse=True)
    fit_, se = term_part(res, rows.X[:, cols][first], cols, column_centres(rows))
    partial = np.asarray(martingale, float) + fit_[at]
    z = stats.norm.ppf(0.5 + level / 2)
    curve = pd.DataFrame({"x": xs, "fit": fit_, "se": se, "lower": fit_ - z * se,
                          "upper": fit_ + z * se})
    return TermPlot(" + ".join(labels), pd.DataFrame({"x": x, "partial": partial}), curve)


def _terms_of(res, variable):
    """(labels, coefficient positions) of the fit's terms that read ``variable`` alone."""
    formula = getattr(res, "formula", None)
    columns = term_columns(res)
    if formula is None:
        if variable not in columns:
            raise ValueError(f"{variable!r} is not a covariate of the fit (its covariates: "
                             f"{list(columns)})")
        return [variable], columns[variable]
    labels = [label for label in columns if formula.reads[label] == {variable}]
    if not labels:
        shared = [label for label in columns if variable in formula.reads[label]]
        raise ValueError(f"{variable!r} has no term of its own in the formula {formula.text!r}"
                         + (f": it enters only through {shared}, whose part depends on the "
                            "other variable (engine.effect_curve draws it at chosen values)"
                            if shared else f"; its variables are {formula.variables}"))
    return labels, [j for label in labels for j in columns[label]]


def _values(res, covariate, cohort, n):
    """The covariate's values per row: its column of the cohort, or the values given."""
    if isinstance(covariate, str):
        rows = _subjects(res, cohort)
        if isinstance(rows, Cohort) and covariate in rows.variables:
            return np.array(rows.variables[covariate], dtype=float)
        if not isinstance(rows, Cohort) or covariate not in rows.names:
            names = [*rows.names, *rows.variables] if isinstance(rows, Cohort) else []
            raise ValueError(f"{covariate!r} is not a covariate of the fitted cohort "
                             f"(its covariates: {names}); pass its values instead, one per "
                             "row")
        return rows.X[:, rows.names.index(covariate)].toarray().ravel().astype(float)
    try:
        x = np.asarray(covariate, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError("the covariate's values must be numbers, one per row") from None
    if x.size != n:
        raise ValueError(f"the covariate has {x.size} values; the fit has {n} rows: give one "
                         "value per row, in the cohort's order")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"the covariate has missing or infinite values in rows "
                         f"{bad[:5].tolist()}{' ...' if bad.size > 5 else ''}: fill them or "
                         "leave those rows out of the fit")
    return x


def _subjects(res, cohort):
    """The rows the residuals are of: ``cohort``, else the fit's (before its cut points)."""
    if cohort is not None:
        return cohort
    if res.spec.get("cut_points"):
        return getattr(getattr(res, "problem", None), "subjects", None)
    return fitted_cohort(res)
