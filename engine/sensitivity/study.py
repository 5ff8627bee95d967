"""``engine.sensitivity_study``: a grid of analysis variants of one Cox fit, fitted together.

The variants are grouped by layout (stratification design, cut points, ties: what changes the
sort), each layout is sorted once and its variants are fitted on it in a warm-started chain
(subgroup by subgroup, the penalties from the strongest down).  Serially a layout's chain is
one piece; with workers it is cut by adjustment set and penalty (``_items``), and the pieces go
to ``parallel`` as ``engine.cross_validate``'s folds do (threads sharing the sorted layout,
processes, Dask).  A variant that cannot be fitted gets a row saying why, and the rest of the
grid goes on.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core import parallel as par
from ..regression.fit import fit
from ..regression.priors import L1, L2
from .budget import check_budget, grid_cost, grid_workers
from .evalue import evalue_columns
from .fitting import VariantFits
from .grid import AXES, check_axes
from .negative_controls import calibrated
from .variant import fit_arguments, variant_cohort

LAYOUT_AXES = ("strata", "cut_points", "ties")


@dataclass
class SensitivityResult:
    """What ``engine.sensitivity_study`` returns.

    table : DataFrame, one row per variant and coefficient of interest: variant (its index),
        the spec columns (one per axis, the choice's label), coefficient, estimate (log HR),
        hr, se, hr_lower, hr_upper (95% Wald), p, n, events, converged, n_iter, seconds, error
        (why a variant failed; empty otherwise), note (warnings: collinear columns, divergence),
        evalue_point, evalue_ci (VanderWeele & Ding 2017; rare-outcome form where events / n
        < 0.15, else the square-root transformation of the HR, as EValue's evalues.HR)
    cost : the estimate made before running (bytes, seconds); timings : stage -> seconds
    """

    table: pd.DataFrame
    cost: dict
    timings: dict
    axes: object = field(repr=False)
    base: dict = field(repr=False)
    of_interest: list = field(repr=False)
    cohort: object = field(repr=False)

    def fit_arguments(self, variant: int) -> dict:
        """``engine.fit`` keyword arguments reproducing one variant, its cohort included."""
        spec = self.spec(variant)
        return {"cohort": variant_cohort(self.cohort, self.axes, spec),
                **fit_arguments(self.axes, spec, self.base, self.of_interest)}

    def refit(self, variant: int):
        """The variant fitted on its own by ``engine.fit`` (a FitResult)."""
        return fit(**self.fit_arguments(variant))

    def calibrate(self, controls: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
        """The table with calibrated_p, calibrated_hr, calibrated_lower and calibrated_upper
        from negative-control estimates (``engine.negative_control_estimates``)."""
        return pd.concat([self.table, calibrated(self.table, controls, level)], axis=1)

    def spec(self, variant: int) -> dict:
        """The variant's choice on every axis (axis -> label)."""
        rows = self.table.loc[self.table["variant"] == variant]
        if rows.empty:
            raise ValueError(f"variant {variant!r} is not in this study; variants are 0 to "
                             f"{int(self.table['variant'].max())}.")
        return {axis: rows.iloc[0][axis] for axis in AXES}


def sensitivity_study(cohort, of_interest, vary: dict, base: dict | None = None,
                      parallel=None, n_jobs=None, max_memory=None, max_seconds=None,
                      progress=None, cancel=None) -> SensitivityResult:
    """Fit every combination of the choices in ``vary`` and tabulate the coefficients of
    interest (see engine.sensitivity.grid for the axes).

    Parameters
    ----------
    cohort : engine.Cohort (Cox: event 0/1)
    of_interest : covariate name(s) reported, e.g. the treatment; in every adjustment set, and
        left out of the penalty unless ``base["unpenalized"]`` says otherwise
    vary : dict axis -> choices: subgroup, covariates, penalty, strata, cut_points, ties,
        follow_up (each a list, or a dict label -> choice)
    base : engine.fit options shared by all variants (ties, penalty, cut_points, unpenalized,
        backend, solver, tol, max_iter, precision, tv_route) and ``covariates`` (the base
        adjustment set); an axis not in ``vary`` takes its value from here
    parallel, n_jobs : as engine.cross_validate (None/"serial", "threads", "processes",
        "dask", an address or a distributed.Client); "threads" (CPU backend) shares one sorted
        layout between the usable cores: 1.5x serial at 10^5-10^6 rows (bench/sensitivity.py),
        slower than serial on small cohorts (rossi's 84 variants: 5.3 s against 2.9 s)
    max_memory, max_seconds : refuse before starting (MemoryError, TimeoutError) when the
        estimate (engine.sensitivity.budget) exceeds them
    progress : callable(done, total) per finished group of variants; cancel : Event-like

    Returns
    -------
    SensitivityResult
    """
    t0 = time.perf_counter()
    base = dict(base or {})
    of_interest = [of_interest] if isinstance(of_interest, str) else list(of_interest)
    _check_base(cohort, base, of_interest)
    par.check(parallel, n_jobs)
    axes = check_axes(cohort, base, vary, of_interest)
    variants = axes.variants()
    groups = {}
    for i, spec in enumerate(variants):
        groups.setdefault(tuple(spec[a] for a in LAYOUT_AXES), []).append((i, spec))
    if parallel == "threads" and base.get("backend", "cpu") != "cpu":
        raise ValueError("parallel='threads' fits the variants side by side on the CPU's "
                         f"cores; backend={base['backend']!r} runs them one after another on "
                         "the device: leave parallel out.")
    workers = grid_workers(parallel, n_jobs)
    cost = grid_cost(cohort, axes, len(variants), len(groups), parallel, n_jobs)
    check_budget(cost, max_memory, max_seconds)
    items = [item for key, members in groups.items()
             for item in _items(key, sorted(members, key=lambda m: _chain_order(axes, m[1])),
                                -(-workers // len(groups)))]
    if workers > 1:     # the longest first, so that no worker is left with one at the end
        items.sort(key=lambda item: -_work(axes, item[1]))
    t1 = time.perf_counter()
    local = parallel in (None, "serial", "threads")     # this process fits every item
    task = VariantFits(cohort, axes, base, of_interest,
                       items=Counter(key for key, _ in items) if local else None)
    rows = [r for out in par.run(task, items, parallel, n_jobs, progress, cancel) for r in out]
    t2 = time.perf_counter()
    table = pd.DataFrame(rows).sort_values(["variant"], kind="stable", ignore_index=True)
    table = pd.concat([table, evalue_columns(table)], axis=1)
    return SensitivityResult(table=table, cost=cost,
                             timings={"prepare": t1 - t0, "fits": t2 - t1,
                                      "total": time.perf_counter() - t0},
                             axes=axes, base=base, of_interest=of_interest, cohort=cohort)


def _items(key, chain, workers):
    """The work items of one layout's warm-start chain: the chain whole for one worker.  For
    more, the chain's choices of columns and penalty are dealt into up to 4 pieces a worker,
    each a run of consecutive choices on every row set in chain order, so every variant but
    a piece's first still starts from the same choice on the previous rows or from the
    previous penalty (what it starts from serially, but across the pieces' edges); a pool
    hands the pieces out as workers come free.  A grid of fewer choices than workers is cut
    where its rows change, or into even slices."""
    if workers == 1:
        return [(key, chain)]
    choice = [(spec["covariates"], spec["penalty"]) for _, spec in chain]
    choices = list(dict.fromkeys(choice))
    if len(choices) >= workers:
        blocks = np.array_split(np.arange(len(choices)), min(len(choices), 4 * workers))
        piece = {choices[i]: b for b, block in enumerate(blocks) for i in block}
        return [(key, [m for m, c in zip(chain, choice) if piece[c] == b])
                for b in range(len(blocks))]
    rows = [(spec["subgroup"], spec["follow_up"]) for _, spec in chain]
    cuts = [j for j in range(1, len(chain)) if rows[j] != rows[j - 1]]
    pieces = np.split(np.arange(len(chain)), cuts)
    if len(pieces) < workers:
        pieces = np.array_split(np.arange(len(chain)), min(len(chain), workers))
    return [(key, [chain[j] for j in part]) for part in pieces]


def _work(axes, variants) -> int:
    """A work item's size for ordering: its variants' adjustment-set columns (a fit's passes
    over X grow with them)."""
    return sum(len(axes.value("covariates", spec["covariates"])) for _, spec in variants)


def _chain_order(axes, spec):
    """Warm-start order within a layout: by subgroup and follow-up, then adjustment set, then
    the penalty from the strongest (an L1 path from lambda_max down) to none."""
    penalty = axes.value("penalty", spec["penalty"])
    strength = 0.0 if penalty is None else penalty.lam
    labels = {a: list(axes.choices[a]).index(spec[a]) for a in AXES}
    return (labels["subgroup"], labels["follow_up"], labels["covariates"],
            not isinstance(penalty, L1), -strength)


def _check_base(cohort, base, of_interest):
    allowed = {"ties", "penalty", "cut_points", "unpenalized", "backend", "solver", "tol",
               "max_iter", "precision", "tv_route", "covariates"}
    unknown = sorted(set(base) - allowed)
    if unknown:
        raise ValueError(f"base has unknown options {unknown}; it takes {sorted(allowed)} "
                         "(model is 'cox').")
    if not of_interest:
        raise ValueError("of_interest must name at least one covariate (e.g. the treatment).")
    missing = [n for n in of_interest if n not in cohort.names]
    if missing:
        raise ValueError(f"of_interest names {missing}, which are not covariates of the cohort; "
                         f"covariates: {cohort.names[:20]}.")
    unknown = [u for u in base.get("unpenalized", ()) if u not in cohort.names]
    if unknown:
        raise ValueError(f"base['unpenalized'] names {unknown}, which are not covariates of the "
                         f"cohort; covariates: {cohort.names[:20]}.")
    if base.get("penalty") is not None and not isinstance(base["penalty"], L1 | L2):
        raise ValueError(f"base['penalty'] must be None, engine.L1 or engine.L2, got "
                         f"{base['penalty']!r}.")
