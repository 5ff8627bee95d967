"""The formula front door: ``"Surv(time, event) ~ age + sex * treat + ns(bmi, df=4) +
strata(site)"`` parsed by formulaic into named sparse CSC columns, with the spec kept so new data
rebuilds the same columns.

Wilkinson-Rogers notation as formulaic reads it (``a * b`` = ``a + b + a:b``, ``C(site)``
categorical, ``poly(x, 2)`` orthogonal polynomials, ``I(x ** 2)``, ``center(x)``, ``bs(x, 4)``,
``cr(x, df=4)``), plus the survival terms:

- ``ns(x, df=..)`` R's natural cubic spline and ``rcs(x, nk)`` Harrell's restricted cubic spline
  (engine/data/splines.py);
- ``strata(a, b)``: stratify the baseline hazard (not a column), as R's coxph;
- ``Surv(time, event)`` or ``Surv(start, stop, event)`` on the left: the outcome columns.

A Cox model has no intercept: factors are coded against their first level as in R (the
intercept is put in for the coding and its column dropped).  Text columns are categorical.
"""
import difflib
import re
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from formulaic import Formula
from formulaic.errors import DataMismatchWarning, FormulaicError
from formulaic.formula import SimpleFormula
from formulaic.parser.types import Factor
from formulaic.transforms import TRANSFORMS
from formulaic.utils.variables import Variable, get_required_variables

from . import validation as v
from ..core.errors import CohortError
from .sparse_columns import SparseColumns
from .splines import ns, rcs

CONTEXT = {"ns": ns, "rcs": rcs}
_SURV = re.compile(r"^\s*Surv\s*\((?P<args>[^()]*)\)\s*$")
# a transform's name and its opening parenthesis, ns(, np.log(, I(
_CALL = re.compile(r"[A-Za-z_][\w.]*\(")
_STRATA = re.compile(r"^strata\s*\((?P<args>[^()]*)\)$")
_FACTOR = re.compile(r"factor `(?P<factor>[^`]*)`")
_UNDEFINED = re.compile(r"name '(?P<name>[^']+)' is not defined")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _syntax_error(text, exc):
    first = str(exc).splitlines()[0]
    return CohortError(f"the formula {text!r} cannot be parsed: {first}. Write it as R does, "
                       "e.g. 'Surv(time, event) ~ age + sex * treat + ns(bmi, df=4) + "
                       "strata(site)' (terms joined by +, a * b for a + b + a:b).")


def _unknown_name(name, columns, term) -> str:
    """Why a transform's argument ``name`` in ``term`` is not a column: usually a column whose
    name holds a dot or a space (``ph.ecog``), which ends a name inside a transform unless
    quoted."""
    columns = list(map(str, columns))
    quoted = [c for c in columns if c.startswith(name) and c != name and not c.isidentifier()]
    quoted.sort(key=lambda c: c not in term)          # the column the term spells first
    if quoted:
        c = quoted[0]
        fixed = term.replace(c, f"`{c}`") if c in term else f"C(`{c}`)"
        return (f"{name!r} is not a column; the column {c!r} holds a character that ends a "
                f"name inside a transform: write it in backticks, {fixed}.")
    close = difflib.get_close_matches(name, columns, n=3)
    return (f"{name!r} is not a column of the data" +
            (f"; close matches: {close}." if close else "."))


def _outcome(lhs, text):
    """The Surv(...) left-hand side as roles: {'time', 'event'} or {'start', 'time', 'event'}."""
    match = _SURV.match(lhs)
    args = [] if match is None else [a.strip() for a in match["args"].split(",")]
    if match is None or len(args) not in (2, 3) or not all(_NAME.match(a) for a in args):
        raise CohortError(f"the left side {lhs.strip()!r} of the formula {text!r} is not "
                          "Surv(time, event) or Surv(start, stop, event) with column names. "
                          "Write it so, or leave the left side out and pass time=, event=.")
    roles = ("time", "event") if len(args) == 2 else ("start", "time", "event")
    return dict(zip(roles, args))


def _reads(term):
    """The data columns one term (formulaic's Term) reads: each factor's column, or the values
    its expression uses (transform names such as ns, C, np, contr left out).  formulaic's
    required_variables loses the argument of a stateful transform (poly, center, bs) and cuts
    a name at its dot (ph.ecog -> ph)."""
    known = set(CONTEXT) | set(TRANSFORMS)
    reads = set()
    for factor in term.factors:
        if factor.eval_method is Factor.EvalMethod.LOOKUP:
            reads.add(factor.expr)
        elif factor.eval_method is Factor.EvalMethod.PYTHON:
            reads |= {str(n) for n in get_required_variables(factor.expr, {})
                      if Variable.Role.VALUE in n.roles and n.split(".")[0] not in known}
    return reads


def _written(term):
    """A term as formulaic parses it again: its label drops the backticks around a column
    name that is not an identifier (`age at release`) and the braces around a Python
    expression ({age ** 2}, which unbraced is the formula power age ** 2 = age: the term was
    lost), this puts them back."""
    return ":".join(_written_factor(f) for f in term.factors)


def _written_factor(factor) -> str:
    if factor.eval_method is Factor.EvalMethod.LOOKUP:
        return factor.expr if factor.expr.isidentifier() else f"`{factor.expr}`"
    if factor.eval_method is Factor.EvalMethod.PYTHON and not _one_call(factor.expr):
        return "{" + factor.expr + "}"
    return str(factor)


def _one_call(expr: str) -> bool:
    """Whether ``expr`` is one call, ns(bmi, df=4), its parenthesis closing at the end (not
    f(a) + g(b)); brackets inside strings are not looked for (column names are)."""
    start = _CALL.match(expr)
    if start is None:
        return False
    depth = 0
    for k in range(start.end() - 1, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[k], 0)
        if depth == 0:
            return k == len(expr) - 1
    return False


def _typical(series):
    """rms's datadist adjust-to value: the median of numbers, the most frequent other value."""
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return float(series.median())
    return series.mode(dropna=True).iloc[0]


class ModelFormula:
    """A parsed formula: its outcome and strata columns, and (once ``build`` has seen the
    fitting data) formulaic's ModelSpec with the knots, levels and scalings it learnt.

    Attributes
    ----------
    text : str, the formula as written
    outcome : dict, role ("time", "event", "start") -> column, from ``Surv(...)``; {} without
    strata : list of str, columns of ``strata(...)`` terms
    rhs : str, the covariate terms as formulaic reads them (strata and intercept left out)
    names : list of str, the columns ``build`` made (after the fit-time data)
    terms : dict, term label (e.g. "ns(bmi, df=4)", "sex:treat") -> its column names
    variables : list of str, the data columns the covariate terms read
    reads : dict, term label -> the data columns it reads
    adjust_to : dict, variable -> its median (numbers) or most frequent value (others) in the
        fitting data, where effect curves hold the other covariates (as rms's datadist)
    levels : dict, text (or boolean) variable -> the values the fitting data held
    ranges : dict, numeric variable -> (min, max) in the fitting data, the span over which
        effect curves of its splines and polynomials are drawn
    """

    def __init__(self, text):
        if not isinstance(text, str) or not text.strip():
            raise CohortError(f"formula must be a non-empty string such as 'age + sex', got "
                              f"{text!r}.")
        self.text = text
        lhs, _, rhs = text.rpartition("~")
        self.outcome = _outcome(lhs, text) if lhs.strip() else {}
        try:
            parsed = Formula(rhs)
        except FormulaicError as exc:
            raise _syntax_error(text, exc) from None
        if not isinstance(parsed, SimpleFormula):
            raise CohortError(f"the formula {text!r} has more than one right-hand part; write "
                              "one list of terms joined by +.")
        self.strata, kept = [], []
        for term in parsed:
            label = str(term)
            strata = [_STRATA.match(str(f)) for f in term.factors]
            if any(strata):
                if len(term.factors) > 1:
                    raise CohortError(f"the term {label!r} crosses strata() with a covariate; "
                                      "strata only split the baseline hazard. Write "
                                      "strata(...) as its own term, e.g. '+ strata(site)'.")
                self.strata += [a.strip().strip("`") for a in strata[0]["args"].split(",")
                                if a.strip()]
            elif label not in ("1", "0"):
                kept.append(term)
        if not kept:
            raise CohortError(f"the formula {text!r} has no covariate terms. Add at least one, "
                              "e.g. '~ age + sex'.")
        self.rhs = " + ".join(_written(term) for term in kept)
        self.reads = {str(term): _reads(term) for term in kept}
        self.variables = sorted(set().union(*self.reads.values()))
        self.spec = None
        self.names = []
        self.terms = {}
        self.adjust_to = {}
        self.levels = {}
        self.ranges = {}

    def build(self, df):
        """The design of the fitting data: CSC matrix (n, p) and its column names; learns
        every stateful transform's state (knots, levels) for ``design_matrix``."""
        self.check_columns(df)
        mm = self._materialize(lambda: Formula("1 + " + self.rhs).get_model_matrix(
            df, output="sparse", context=CONTEXT, na_action="raise",
            materializer=SparseColumns), df.columns)
        self.spec = mm.model_spec
        X, names = self._drop_intercept(mm)
        self.names = names
        self.terms = {str(term): [c for c in self.spec.column_names[s] if c != "Intercept"]
                      for term, s in self.spec.term_slices.items() if str(term) != "1"}
        self.reads = {str(term): _reads(term) for term in self.spec.term_slices
                      if str(term) != "1"}
        self.adjust_to = {column: _typical(df[column]) for column in self.variables}
        numeric = [column for column in self.variables
                   if pd.api.types.is_numeric_dtype(df[column])
                   and not pd.api.types.is_bool_dtype(df[column])]
        self.levels = {column: set(df[column].dropna().unique()) for column in self.variables
                       if column not in numeric}
        self.ranges = {column: (float(df[column].min()), float(df[column].max()))
                       for column in numeric}
        return X, names

    def design_matrix(self, newdata, names=None):
        """CSC matrix (len(newdata), p) of ``newdata`` with the fitted knots and levels, columns
        in the order of ``names`` (default: all that ``build`` made)."""
        if self.spec is None:
            raise CohortError("this formula has not seen its fitting data yet; build the "
                              "cohort with Cohort.from_frame(..., formula=...) first.")
        if not isinstance(newdata, pd.DataFrame):
            raise CohortError(f"newdata must be a pandas DataFrame, got "
                              f"{type(newdata).__name__}.")
        self.check_columns(newdata, ", in newdata")
        labels = newdata.index.to_numpy()
        for column in self.variables:
            v.check_no_missing(newdata[column], column, "newdata column", labels)
        for column, levels in self.levels.items():
            unknown = ~newdata[column].isin(levels).to_numpy()
            if unknown.any():
                terms = [label for label in self.terms if column in self.reads[label]]
                v.fail_rows(unknown, newdata[column].to_numpy(dtype=object), column,
                            f"newdata column of the term {terms[0]!r}",
                            "levels the model was not fitted on",
                            f"Recode them to fitted levels {sorted(map(str, levels))}.", labels)
        mm = self._materialize(lambda: self.spec.get_model_matrix(newdata, context=CONTEXT),
                               newdata.columns)
        X, built = self._drop_intercept(mm)
        if names is None or list(names) == built:
            return X
        where = {name: j for j, name in enumerate(built)}
        return X[:, [where[name] for name in names]]

    def columns_of(self, term):
        """Column names of one term, given by its label ("ns(bmi, df=4)", "sex:treat")."""
        if term not in self.terms:
            raise CohortError(f"{term!r} is not a term of the formula {self.text!r}; its terms "
                              f"are {list(self.terms)} (variable=... takes every term that "
                              "reads a column).")
        return list(self.terms[term])

    def columns_reading(self, variable):
        """Column names of every term that reads ``variable``: its main effect, spline basis
        and interactions (rms's "factor + higher order factors")."""
        labels = [label for label in self.terms if variable in self.reads[label]]
        if not labels:
            raise CohortError(f"{variable!r} is not a variable of the formula {self.text!r}; "
                              f"its variables are {self.variables}.")
        return [name for label in labels for name in self.terms[label]]

    def interaction_columns(self, a, b):
        """Column names of every term that reads both variables ``a`` and ``b`` (their
        interactions: ``a:b``, ``a:ns(b, df=3)``, ...)."""
        for name in (a, b):
            if name not in self.variables:
                raise CohortError(f"{name!r} is not a variable of the formula {self.text!r}; "
                                  f"its variables are {self.variables}.")
        labels = [label for label in self.terms if {a, b} <= self.reads[label]]
        if not labels:
            raise CohortError(f"the formula {self.text!r} has no interaction of {a!r} and "
                              f"{b!r}. Add one, e.g. '{a} * {b}', and refit.")
        return [name for label in labels for name in self.terms[label]]

    def check_columns(self, df, what=""):
        """Raise a CohortError naming the term whose column ``df`` lacks, with close matches."""
        missing = [c for c in self.variables if c not in df.columns]
        if missing:
            for column in missing:
                terms = [label for label, reads in self.reads.items() if column in reads]
                v.check_columns_exist(df.columns, [(f"formula term {terms[0]!r}{what}",
                                                    column)])

    def _materialize(self, make, columns):
        """Run formulaic on a frame of ``columns``; its errors become CohortErrors naming the
        term and the fix."""
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataMismatchWarning)
            try:
                return make()
            except DataMismatchWarning as exc:
                raise CohortError(f"newdata holds categories the formula {self.text!r} was "
                                  f"not fitted on ({exc}). Recode them to levels of the "
                                  "fitting data.") from None
            except (FormulaicError, ValueError) as exc:
                cause = exc.__cause__ or exc.__context__
                factor = _FACTOR.search(str(exc))
                where = (f"the term {factor['factor']!r}" if factor
                         else f"the formula {self.text!r}")
                if isinstance(cause, CohortError):
                    raise CohortError(f"{where}: {cause}") from None
                undefined = _UNDEFINED.search(str(exc))
                if undefined:
                    term = factor["factor"] if factor else self.text
                    raise CohortError(f"{where}: {_unknown_name(undefined['name'], columns, term)}"
                                      ) from None
                raise CohortError(f"{where} cannot be evaluated: {exc}. Check the column "
                                  "types (numbers for splines and arithmetic) and the "
                                  "transform's arguments.") from None

    @staticmethod
    def _drop_intercept(mm):
        """formulaic's columns without the intercept, always its first (the formula starts
        "1 + "): views of its CSC arrays past the first column, no copy of X (scipy's
        column slice copied every entry: 0.64 s at 10^6 rows x 23 columns)."""
        names = list(mm.model_spec.column_names)
        X = sp.csc_matrix(mm.__wrapped__, dtype=np.float64)
        first = X.indptr[1]
        return sp.csc_matrix((X.data[first:], X.indices[first:], X.indptr[1:] - first),
                             shape=(X.shape[0], X.shape[1] - 1)), names[1:]

    def __repr__(self):
        return f"ModelFormula({self.text!r})"
