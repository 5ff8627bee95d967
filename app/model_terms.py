"""The Design tab's model as a formula and back.

Each covariate has a form (linear, a natural spline with 3-5 df, a restricted cubic spline with
3-5 knots); pairs of covariates may interact; strata split the baseline hazard.  These choices
are written as the engine's formula (engine/data/formula.py), ``age + ns(bmi, df=4) + treat +
sex + treat:sex + strata(site)``, and a typed formula is read back into them: the engine parses
it (its message for a syntax error, an unknown column, a spline it cannot fit), this module maps
its terms to forms.
"""

from __future__ import annotations

import re

from .loading import DataLoadError

FORMS = {"linear": "linear",
         "ns3": "natural spline, df 3", "ns4": "natural spline, df 4",
         "ns5": "natural spline, df 5",
         "rcs3": "restricted cubic spline, 3 knots", "rcs4": "restricted cubic spline, 4 knots",
         "rcs5": "restricted cubic spline, 5 knots"}
_NS = re.compile(r"^ns\((?P<x>.+), df=(?P<k>\d+)\)$")
_RCS = re.compile(r"^rcs\((?P<x>.+), (?:nk=)?(?P<k>\d+)\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
TAKES = ("Terms the Design tab takes: a column (linear), ns(column, df=3..5), rcs(column, "
         "3..5), a:b or a * b of two of them, strata(column). Other terms (poly, C, I(...)) "
         "can be fitted from the exported script.")


def name_text(column: str) -> str:
    """A column as a formula names it (backticks around names that are not identifiers)."""
    return column if _NAME.match(column) else f"`{column}`"


def term_text(column: str, form: str = "linear") -> str:
    """'age', 'ns(age, df=4)' or 'rcs(age, 4)'."""
    name = name_text(column)
    if form == "linear":
        return name
    kind, k = form[:-1], form[-1]
    return f"ns({name}, df={k})" if kind == "ns" else f"rcs({name}, {k})"


def form_columns(form: str) -> int:
    """Columns a form (FORMS) gives a covariate: ns with df k has k, rcs with k knots k - 1,
    linear 1."""
    if form == "linear":
        return 1
    kind, k = form[:-1], int(form[-1])
    return k if kind == "ns" else k - 1


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
    for pattern, kind in ((_NS, "ns"), (_RCS, "rcs")):
        match = pattern.match(text)
        if match:
            form = f"{kind}{match['k']}"
            if form not in FORMS:
                raise DataLoadError(f"{text}: the Design tab offers 3 to 5 "
                                    f"{'df' if kind == 'ns' else 'knots'}. {TAKES}")
            return match["x"].strip("`"), form
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
