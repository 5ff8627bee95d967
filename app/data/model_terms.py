"""The Design tab's model as a formula and back.

Each covariate has a form (linear, a natural spline with 3-5 df, a restricted cubic spline with
3-5 knots, an orthogonal polynomial of degree 2 or 3, categorical: a column per value but the
first); pairs of covariates may interact; strata split the baseline hazard.  These choices are
written as the engine's formula (engine/data/formula.py), ``age + ns(bmi, df=4) + poly(chol, 2)
+ C(stage) + treat + C(stage):treat + strata(site)``, and a typed formula is read back into
them: the engine parses it (its message for a syntax error, an unknown column, a spline it
cannot fit), this module maps its terms to forms.
"""

from __future__ import annotations

import re

from .loading import DataLoadError

FORMS = {"linear": "linear",
         "ns3": "natural spline, df 3", "ns4": "natural spline, df 4",
         "ns5": "natural spline, df 5",
         "rcs3": "restricted cubic spline, 3 knots", "rcs4": "restricted cubic spline, 4 knots",
         "rcs5": "restricted cubic spline, 5 knots",
         "poly2": "orthogonal polynomial, degree 2", "poly3": "orthogonal polynomial, degree 3",
         "categorical": "categorical (each value against the first)"}
SPLINE_VALUES = 6   # distinct values a column needs before a spline is offered (ns with df 5)
MAX_LEVELS = 20     # distinct values a categorical form takes at most
_NS = re.compile(r"^ns\((?P<x>.+), df=(?P<k>\d+)\)$")
_RCS = re.compile(r"^rcs\((?P<x>.+), (?:nk=)?(?P<k>\d+)\)$")
_POLY = re.compile(r"^poly\((?P<x>[^,]+)(?:, (?:degree=)?(?P<k>\d+))?\)$")
_C = re.compile(r"^C\((?P<x>[^,]+)\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TAKES = ("Terms the Design tab takes: a column (linear), ns(column, df=3..5), rcs(column, "
         "3..5), poly(column, 2 or 3), C(column), a:b or a * b of two of them, strata(column). "
         "Other terms (I(...), log(...), bs(...), C with contrasts) can be fitted from the "
         "exported script, its formula edited.")


def name_text(column: str) -> str:
    """A column as a formula names it: backticks around names that are not identifiers (a
    dotted name such as ph.ecog would be read as an attribute)."""
    return column if _NAME.match(column) else f"`{column}`"


def term_text(column: str, form: str = "linear") -> str:
    """'age', 'ns(age, df=4)', 'rcs(age, 4)', 'poly(age, 2)' or 'C(age)'."""
    name = name_text(column)
    if form == "linear":
        return name
    if form == "categorical":
        return f"C({name})"
    kind, k = form[:-1], form[-1]
    return {"ns": f"ns({name}, df={k})", "rcs": f"rcs({name}, {k})",
            "poly": f"poly({name}, {k})"}[kind]


def form_columns(form: str, values: int) -> int:
    """Columns a form (FORMS) gives a covariate of ``values`` distinct values: ns with df k
    and a polynomial of degree k have k, rcs with k knots k - 1, categorical values - 1,
    linear 1."""
    if form == "linear":
        return 1
    if form == "categorical":
        return max(1, values - 1)
    kind, k = form[:-1], int(form[-1])
    return k - 1 if kind == "rcs" else k


def refusal(column: str, form: str, values: int) -> str:
    """Why a column of ``values`` distinct values cannot take ``form``, '' when it can: a
    categorical form has at most MAX_LEVELS values, a polynomial of degree k needs k + 1.
    Splines are the engine's to refuse (their knots need enough values)."""
    if form == "categorical" and values > MAX_LEVELS:
        return (f"{column} has {values} distinct values; a categorical form needs at most "
                f"{MAX_LEVELS}.")
    if form.startswith("poly") and values <= int(form[-1]):
        return (f"{column} has {values} distinct values; a polynomial of degree {form[-1]} "
                f"needs at least {int(form[-1]) + 1}.")
    return ""


def check_form(column: str, form: str, values: int) -> None:
    """DataLoadError when a column of ``values`` distinct values cannot take ``form``."""
    why = refusal(column, form, values)
    if why:
        raise DataLoadError(why)


def offered_forms(values: int) -> list[str]:
    """The forms the Design tab offers a numeric column of ``values`` distinct values."""
    return [form for form in FORMS if not refusal("", form, values)
            and (values >= SPLINE_VALUES or not form.startswith(("ns", "rcs")))]


def rhs_text(covariates: list, forms: dict, interactions: list) -> str:
    """The covariate terms, joined by +."""
    terms = [term_text(c, forms.get(c, "linear")) for c in covariates]
    terms += [f"{term_text(a, forms.get(a, 'linear'))}:{term_text(b, forms.get(b, 'linear'))}"
              for a, b in interactions]
    return " + ".join(terms)


def formula_text(covariates: list, forms: dict, interactions: list, strata: list) -> str:
    """The whole model as the Design tab shows it, strata included."""
    return " + ".join([rhs_text(covariates, forms, interactions)]
                      + [f"strata({name_text(s)})" for s in strata])


def _factor(text: str) -> tuple[str, str]:
    """(column, form) of one factor of a term; DataLoadError for others."""
    offers = {"ns": "3 to 5 df", "rcs": "3 to 5 knots", "poly": "degree 2 or 3"}
    for pattern, kind in ((_NS, "ns"), (_RCS, "rcs"), (_POLY, "poly")):
        match = pattern.match(text)
        if match:
            form = f"{kind}{match['k'] or 1}"     # poly's degree is 1 unless given
            if form not in FORMS:
                raise DataLoadError(f"{text}: the Design tab offers {offers[kind]}. {TAKES}")
            return match["x"].strip("`"), form
    match = _C.match(text)
    if match:
        return match["x"].strip("`"), "categorical"
    if "(" in text:
        raise DataLoadError(f"the term {text!r} is not one the Design tab can show. {TAKES}")
    return text, "linear"


def read_formula(model) -> dict:
    """The choices of a formula the engine parsed (a cohort's ``formula``): covariates, forms
    (non-linear only), interactions, strata. DataLoadError for terms the tab cannot show or
    interactions without their main effects."""
    from formulaic import Formula  # loaded once a formula is typed, as the engine does

    covariates, forms, pairs = [], {}, []
    for term in Formula(model.rhs):
        if str(term) in ("0", "1"):   # formulaic's intercept: a Cox model has none
            continue
        factors = [_factor(str(f)) for f in term.factors]
        if len(factors) == 1:
            column, form = factors[0]
            if column in covariates:
                raise DataLoadError(f"{column!r} appears twice among the main effects; give it "
                                    "one form.")
            covariates.append(column)
            if form != "linear":
                forms[column] = form
        elif len(factors) == 2:
            pairs.append(factors)
        elif len(factors) > 2:
            raise DataLoadError(f"the term {str(term)!r} crosses three columns. {TAKES}")
    interactions = []
    for factors in pairs:
        for column, form in factors:
            if column not in covariates:
                raise DataLoadError(f"the interaction {':'.join(c for c, _ in factors)} needs "
                                    f"{column!r} as a main effect too: write a * b.")
            if form != forms.get(column, "linear"):
                raise DataLoadError(f"{column!r} enters its interaction as "
                                    f"{term_text(column, form)} but its main effect as "
                                    f"{term_text(column, forms.get(column, 'linear'))}; use "
                                    "the same form in both.")
        interactions.append([factors[0][0], factors[1][0]])
    return {"covariates": covariates, "forms": forms, "interactions": interactions,
            "strata": list(model.strata)}
