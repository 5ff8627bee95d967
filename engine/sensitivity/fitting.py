"""The fits of one layout's variants on its one sorted Problem, each warm-started from the
nearest one fitted before it.

A variant's adjustment set holds the columns it leaves out at zero (``Problem.solve``'s
``fixed``), its subgroup and end of follow-up are case weights (``layout.Layout``), its penalty
is the pair of strength vectors.  What ``engine.fit`` of the variant's own cohort would do is
done here on the weighted rows: unpenalised columns aliased on those rows (engine.collinearity,
with the same budget as ``Problem.aliased``) are held at zero and reported as NaN, diverging
ones as +/-inf, and the standard errors come from ``FitResult`` on the same Problem.  So each
variant's coefficients equal a separate ``engine.fit`` of ``variant.variant_cohort`` to the
solver's precision (a warm start and a start from zeros stop at different points near the
same optimum: about 1e-9 at the default tol at 10^6 x 1,000).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..data import collinearity
from ..core.errors import CohortError
from ..regression.problem import ALIAS_CHECK_BUDGET
from ..regression.result import FitResult
from .layout import Layout, Layouts

ROW_COLUMNS = ("coefficient", "estimate", "hr", "se", "hr_lower", "hr_upper", "p")


class VariantFits:
    """Picklable task: item (layout key, [(variant index, spec)]) -> the rows of those variants.
    Each process sorts a layout once and lends it to its worker threads (``Layouts``: twins
    with weights of their own on the same X), freeing it after its last item (``items``:
    layout key -> its number of items, where this process fits them all).

    BLAS runs on one thread here: a grid's BLAS calls are small (dot products of N, Newton's
    information of events x s^2) and its parallelism is its workers; OpenBLAS's second thread
    waiting for a core on a loaded 2-core machine made one dot product of 10^5 take 1-10 ms
    instead of 15 us."""

    def __init__(self, cohort, axes, base, of_interest, items=None):
        self.cohort, self.axes, self.base = cohort, axes, dict(base)
        self.of_interest = list(of_interest)
        self.layouts = Layouts(items)

    def __call__(self, item) -> list[dict]:
        key, variants = item
        try:
            layout = self.layouts.lend(key, lambda: Layout(self.cohort, self.axes, key,
                                                           self.base, self.of_interest))
        except (CohortError, ValueError) as exc:
            return [_failed(i, spec, f"{type(exc).__name__}: {exc}") for i, spec in variants]
        layout.start_item()
        try:
            return self._fit_chain(layout, variants)
        finally:
            self.layouts.give_back(key, layout)

    def _fit_chain(self, layout, variants) -> list[dict]:
        rows, last, same = [], None, {}
        with threadpool_limits(1):
            for i, spec in variants:
                # the same adjustment set and penalty on the previous rows (a subgroup, a
                # follow-up end) is the nearest start: its optimum moves little, as a CV fold's
                # (at 10^5 x 1,000 it took 10% fewer steps than the previous penalty of the
                # path, whose gradient would spare one pass)
                choice = (spec["covariates"], spec["penalty"])
                try:
                    out, end = self.fit_one(layout, i, spec, same.get(choice, last))
                except (CohortError, ValueError, ArithmeticError,
                        np.linalg.LinAlgError) as exc:
                    out, end = [_failed(i, spec, f"{type(exc).__name__}: {exc}")], None
                rows.extend(out)
                if end is not None:
                    same[choice] = last = end
        return rows

    def fit_one(self, layout, index, spec, init):
        """Fit one variant from ``init`` (a Start or None); return its rows and where it ended
        (the next start; None after a failure or a diverging fit, so the next one starts from
        zeros)."""
        t0 = time.perf_counter()
        axes = self.axes
        rows_key = (spec["subgroup"], spec["follow_up"])
        n, events, w = layout.rows(rows_key, axes.value("subgroup", spec["subgroup"]),
                                   axes.value("follow_up", spec["follow_up"]))
        if events == 0:
            return [_failed(index, spec, f"no events among the {n} rows of this variant",
                            n=n)], None
        problem = layout.problem
        included = layout.columns(axes.value("covariates", spec["covariates"]))
        names = np.asarray(problem.names)
        split = _empty_intervals(problem, w, included)
        if split:
            return [_failed(index, spec, f"no episode has a non-zero {split[0]} in this "
                            "variant: its interval coefficient cannot be estimated. Drop or "
                            "move the cut points.", n=n, events=events)], None
        penalty = axes.value("penalty", spec["penalty"])
        layout.use_rows(rows_key)
        lam1, lam2 = problem.penalty_vectors(penalty)
        unpenalised = (lam1 == 0) & (lam2 == 0) & included
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            key = (*rows_key, unpenalised.tobytes())
            if key not in layout.aliased:
                layout.aliased[key] = _aliased(problem, w, unpenalised)
            aliased, collinear = layout.aliased[key]
            fixed = ~included | aliased
            start = np.zeros(problem.p) if init is None else np.where(fixed, 0.0, init.beta)
            known = (None if init is None
                     else init.gradient_at(spec["covariates"], fixed, lam1))
            state = problem.solve(lam1, lam2, start, fixed, gradient=known)
            runaway = state.frozen & ~fixed
            values = np.where(fixed, np.nan, state.beta)
            values[runaway] = np.sign(values[runaway]) * np.inf
            coef = pd.Series(values, index=layout.index)
            result = FitResult(
                coef=coef, loglik=float(problem.model.loglik()), converged=bool(state.converged),
                n_iter=state.n_iter, timings={}, diverged=list(names[runaway]),
                penalized=pd.Series((lam1 > 0) | (lam2 > 0), index=coef.index),
                spec={"model": "cox"}, n=n, n_events=events, problem=problem,
                beta=state.beta.copy(), penalty=penalty)
            interest = _of_interest(problem.names, self.of_interest, problem.cut_points)
            summary = result.summary_of(interest)
        notes = _notes(collinear, caught, list(names[runaway]), state)
        seconds = time.perf_counter() - t0
        rows, table = [], summary.to_dict("index")
        for name in interest:
            s = table[name]
            rows.append({"variant": index, **spec, "coefficient": name, "estimate": s["coef"],
                         "hr": s["hr"], "se": s["se"], "hr_lower": s["hr_lower"],
                         "hr_upper": s["hr_upper"], "p": s["p"], "n": n, "events": events,
                         "converged": bool(state.converged), "n_iter": int(state.n_iter),
                         "seconds": seconds, "error": "", "note": notes})
        if runaway.any():
            return rows, None
        return rows, Start(state.beta.copy(), state.gradient, spec["covariates"], fixed,
                           lam1 > 0)


@dataclass
class Start:
    """Where a variant's fit ended: the coefficients, the next variant's start, and the
    gradient there (the solver's last KKT check, exact on the L1 coordinates at zero), which
    the next variant on the same columns screens with instead of a pass over every column (the
    strong rule needs the gradient at the start; Tibshirani et al. 2012).  On the same rows
    (the next penalty of a path) it is that gradient; on other rows (the same choice on the
    next subgroup or end of follow-up) a near one, which only screens: the KKT check at
    convergence reads the exact gradient and brings back any column the screen missed."""

    beta: np.ndarray
    gradient: np.ndarray | None
    covariates: str         # the adjustment set's label
    fixed: np.ndarray       # the columns held at zero
    penalised: np.ndarray   # the L1 columns, on which the gradient is exact at zero

    def gradient_at(self, covariates, fixed, lam1):
        """The gradient to screen a solve from ``beta`` with on this adjustment set, holding
        ``fixed`` at zero with L1 strengths ``lam1``, or None where it has none."""
        same = (self.gradient is not None and covariates == self.covariates
                and np.array_equal(fixed, self.fixed) and not np.any((lam1 > 0) & ~self.penalised))
        return self.gradient if same else None


def _of_interest(names, of_interest, cut_points):
    """The coefficients of interest among a Problem's names: each, or its interval columns."""
    out = []
    for name in of_interest:
        out.extend([n for n in names if n == name or (name in cut_points
                                                      and n.startswith(f"{name}["))])
    return out


def _empty_intervals(problem, w, included) -> list:
    """Interval columns of split covariates with no stored value on the rows of positive
    weight: ``engine.fit`` of the variant's own cohort refuses them (engine.episodes)."""
    if not problem.cut_points:
        return []
    X = problem.cohort.X
    seen = np.concatenate([[0], np.cumsum((w > 0)[X.indices])])
    count = seen[X.indptr[1:]] - seen[X.indptr[:-1]]
    return [name for j, name in enumerate(problem.names)
            if included[j] and count[j] == 0 and name.split("[")[0] in problem.cut_points]


def _aliased(problem, w, unpenalised):
    """``Problem.aliased`` on this variant: the information at beta = 0 over its unpenalised
    columns, with its weights set (rows of weight zero enter no risk set), read by
    engine.data.collinearity.  The mask of aliased columns and a sentence naming each; skipped
    above the same budget (dense rows x columns^2 bound)."""
    out = np.zeros(problem.p, bool)
    cols = np.flatnonzero(unpenalised)
    if cols.size == 0:
        return out, []
    rows, events = np.count_nonzero(w), problem.n_events
    if float(rows + events) * cols.size ** 2 > ALIAS_CHECK_BUDGET:
        return out, []
    m = problem.model
    m.set_beta(np.zeros(m.p))
    said = []
    for col, partners in collinearity.aliased_columns(m.information(cols)[2], m.scale[cols]):
        out[cols[col]] = True
        with_ = (f"a linear combination of {', '.join(problem.names[cols[q]] for q in partners)}"
                 if partners else "constant within every risk set (or stratum)")
        said.append(f"covariate {problem.names[cols[col]]!r} is {with_} (aliased) in this "
                    "variant: its coefficient is reported as NaN")
    return out, said


def _notes(collinear, caught, diverged, state) -> str:
    notes = [*collinear, *(str(w.message) for w in caught)]
    if diverged:
        notes.append(f"monotone likelihood: {', '.join(diverged)} diverge (+/-inf)")
    if not state.converged:
        notes.append(f"not converged after {state.n_iter} iterations")
    return "; ".join(dict.fromkeys(notes))


def _failed(index, spec, reason, n=0, events=0) -> dict:
    return {"variant": index, **spec, "coefficient": "", "estimate": np.nan, "hr": np.nan,
            "se": np.nan, "hr_lower": np.nan, "hr_upper": np.nan, "p": np.nan, "n": n,
            "events": events, "converged": False, "n_iter": 0, "seconds": 0.0, "error": reason,
            "note": ""}
