"""Jobs and kept fits: snapshots of the store that a worker thread runs (fit, cross-validation,
the path, the bootstrap), and the finished fits the Results and Export tabs show.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import engine

from ..shell.caught_warnings import collected
from ..shell.choices import RATIOS


def ratio_summary(res) -> pd.DataFrame:
    """res.summary with exp(coef) and its limits named hr, hr_lower, hr_upper, as the app's
    tables and plots read them: a Poisson fit's incidence rate ratios (irr) too (the tables
    shown name each model's ratio: shell.choices.RATIOS)."""
    return res.summary.rename(columns={"irr": "hr", "irr_lower": "hr_lower",
                                       "irr_upper": "hr_upper"})


@dataclass
class KeptFit:
    """One finished fit, kept for the results and the comparison table."""

    name: str
    result: object          # engine.FitResult
    summary: pd.DataFrame   # result.summary, computed once in the worker
    spec: dict              # the analysis as asked: data, roles, design, options
    elapsed: float          # wall seconds, cohort building included
    warnings: list = field(default_factory=list)
    n_strata: int = 1       # strata of the cohort as the user defined them (before cut points)
    frame: object = None    # the uploaded DataFrame it read (saved with the analysis file)
    dropped: dict = field(default_factory=dict)  # column -> rows dropped (complete cases)
    n_dropped: int = 0                           # rows dropped (a row may miss two values)
    _tests: str | None = field(default=None, repr=False)

    def tests(self) -> str:
        """The global tests and the concordance as Results prints them (fit_tests), computed
        once: by the job's worker thread for a new fit (10^6 rows: 1.2 s that held the
        server's event loop, every session's, inside the fit's result patch)."""
        if self._tests is None:
            self._tests = fit_tests(self.result)
        return self._tests

    @property
    def dropped_text(self) -> str:
        """'3 (ph.ecog 1, wt.loss 2)': the rows a complete-case analysis left out."""
        if not self.dropped:
            return "0"
        return (f"{self.n_dropped} ("
                + ", ".join(f"{k} {v}" for k, v in self.dropped.items()) + ")")

    def row(self) -> dict:
        """One row of the comparison table."""
        res, spec = self.result, self.spec
        treatment = spec["roles"].get("treatment")
        ratio = RATIOS[spec["options"].get("model", "cox")][0]
        hr = ""
        if treatment:
            names = [n for n in self.summary.index
                     if n == treatment or n.startswith(treatment + "[")]
            hr = "; ".join(f"{n}: {ratio} {self.summary.loc[n, 'hr']:.4g}" for n in names)
        cuts = spec["design"]["cut_points"]
        return {
            "fit": self.name,
            "model": spec["options"]["model"]
            + (f" (cause {spec['options']['cause']})" if spec["options"].get("cause") else ""),
            "data": spec["data"]["label"],
            "n": res.n,
            "events": res.n_events,
            "rows dropped (missing)": self.dropped_text,
            "strata": self.n_strata,
            "cut points": "; ".join(f"{k} at {', '.join(f'{c:g}' for c in v)}"
                                    for k, v in cuts.items()) or "none",
            "ties": spec["options"]["ties"],
            "penalty": res.spec.get("penalty", "none"),
            "solver": spec["options"]["solver"],
            "converged": bool(res.converged),
            "iterations": int(res.n_iter),
            "loglik": float(res.loglik),
            "treatment ratio": hr,
            "seconds": round(self.elapsed, 3),
        }

    def release(self) -> None:
        """Free what the fit's prepared problem holds (a GPU fit's device memory) once the
        fit is no longer kept; its numbers stay, but it cannot be re-solved."""
        self.result.release()


def fit_tests(res) -> str:
    """The global tests (LR, Wald, score) and the concordance of a fit, where they apply."""
    parts = []
    try:
        tests = engine.global_tests(res)
        cox = res.spec.get("model") == "cox"
        names = {"likelihood ratio": "Likelihood ratio", "wald": "Wald",
                 "score": "Score (log-rank)" if cox else "Score", "robust score": "Robust score"}
        parts.append("; ".join(f"{names[k]} test = {r['statistic']:.2f} on {int(r['df'])} df, "
                               f"p = {r['p']:.3g}" for k, r in tests.table.iterrows())
                     + (f" ({tests.spec['note']})" if "note" in tests.spec else ""))
    except Exception as exc:   # penalised or Fine-Gray fits: say why there are none
        parts.append(f"Global tests: not available ({exc})")
    if res.spec.get("model") == "poisson":
        parts.append("Concordance: for Cox and Fine-Gray fits (a Poisson fit's rates: the "
                     "incidence rate ratios below and the Describe tab's rates)")
        return "  \n".join(parts)
    try:
        c = engine.concordance(res)
        parts.append(f"Concordance (Harrell's C) = {c['concordance']:.3f}")
    except Exception as exc:   # e.g. Fine-Gray: say why there is none
        parts.append(f"Concordance: not available ({exc})")
    return "  \n".join(parts)


@dataclass
class FitJob:
    """A snapshot of the store at the moment Fit was pressed; ``run`` works in any thread."""

    name: str
    spec: dict
    make_cohort: object     # callable() -> engine.Cohort
    options: dict           # keyword arguments of engine.fit
    frame: object = None    # the uploaded DataFrame (KeptFit.frame)
    scale: dict | None = None   # fraction, key, kwargs: lambda = fraction x engine.lambda_max

    def run(self, cancel: threading.Event | None = None, progress=None) -> KeptFit:
        """Build the cohort and fit; engine.Cancelled when ``cancel`` is set (between
        iterations); ``progress(done, total)`` after each iteration, as engine.fit.
        With ``scale``, lambda_max is computed first and the penalty is fraction x lambda_max
        (4 significant digits, as the app shows it); the kept spec records both."""
        t0 = time.perf_counter()
        with collected() as caught:
            cohort = self.make_cohort()
            if self.scale is not None:
                self._scale_penalty(cohort)
            if cancel is not None and cancel.is_set():
                raise engine.Cancelled(f"{self.name} cancelled before the first iteration")
            res = engine.fit(cohort, progress=progress, cancel=cancel, **self.options)
            summary = ratio_summary(res)
            tests = fit_tests(res)
        messages = list(dict.fromkeys(caught))
        return KeptFit(self.name, res, summary, self.spec, time.perf_counter() - t0, messages,
                       n_strata=int(cohort.n_strata), frame=self.frame,
                       dropped=dict(cohort.dropped), n_dropped=cohort.n_dropped,
                       _tests=tests)

    def _scale_penalty(self, cohort) -> None:
        top = engine.lambda_max(cohort, **self.scale["kwargs"])
        lam = float(f"{self.scale['fraction'] * top:.4g}")
        kind = engine.L1 if self.scale["kwargs"]["penalty"] == "l1" else engine.L2
        self.options = {**self.options, "penalty": kind(lam)}
        self.spec = json.loads(json.dumps(self.spec))
        self.spec["options"].update(strength=lam, lambda_max=top)


@dataclass
class CrossValidationRun:
    """A finished cross-validation: the engine's result and the name of its kept refit."""

    name: str
    penalty: str            # "L1" | "L2"
    result: object          # engine.CrossValidationResult (.curve, .penalty, .fit, .lambda_max)

    @property
    def chosen(self) -> float:
        return float(self.result.penalty.lam)


@dataclass
class CrossValidationJob:
    """A snapshot for engine.cross_validate; ``run`` works in any thread."""

    name: str
    spec: dict
    make_cohort: object     # callable() -> engine.Cohort
    options: dict           # keyword arguments of engine.cross_validate
    frame: object = None    # the uploaded DataFrame (KeptFit.frame)

    def run(self, cancel: threading.Event | None = None, progress=None):
        """(CrossValidationRun, KeptFit of the refit); engine.Cancelled when ``cancel`` is set."""
        t0 = time.perf_counter()
        with collected() as caught:
            cohort = self.make_cohort()
            cv = engine.cross_validate(cohort, progress=progress, cancel=cancel, **self.options)
            summary = ratio_summary(cv.fit)
            tests = fit_tests(cv.fit)
        spec = json.loads(json.dumps(self.spec))
        spec["options"].update(strength=float(cv.penalty.lam), strength_as="lambda",
                               lambda_max=float(cv.lambda_max),
                               cross_validated={"folds": self.options["folds"],
                                                "grid": self.options["grid"]})
        messages = list(dict.fromkeys(caught))
        kept = KeptFit(self.name, cv.fit, summary, spec, time.perf_counter() - t0, messages,
                       n_strata=int(cohort.n_strata), frame=self.frame,
                       dropped=dict(cohort.dropped), n_dropped=cohort.n_dropped,
                       _tests=tests)
        return CrossValidationRun(self.name, spec["options"]["penalty"], cv), kept




@dataclass
class PathRun:
    """A finished regularisation path (engine.path) and the design it was computed for."""

    name: str
    result: object          # engine.PathResult (.lambdas, .coef, .df, .dev_ratio, .lambda_max)
    key: str                # Store.penalty_key() when it was asked


@dataclass
class PathJob:
    """A snapshot for engine.path; ``run`` works in any thread."""

    name: str
    make_cohort: object     # callable() -> engine.Cohort
    options: dict           # keyword arguments of engine.path
    key: str

    def run(self, cancel: threading.Event | None = None, progress=None) -> PathRun:
        """The path; engine.Cancelled between its fits when ``cancel`` is set."""
        with collected():
            cohort = self.make_cohort()
            res = engine.path(cohort, progress=progress, cancel=cancel, **self.options)
        return PathRun(self.name, res, self.key)


@dataclass
class BootstrapRun:
    """A finished bootstrap of the design: engine.bootstrap's result and the analysis it
    resampled (``spec``, so a page can tell whether it still describes the current design)."""

    name: str
    result: object          # engine.BootstrapResult
    spec: dict
    warnings: list = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        """Per covariate: the hazard ratio, its model-based 95% CI (the fit's) and the
        bootstrap percentile 95% CI, and how often a replicate kept it non-zero."""
        fit, boot = ratio_summary(self.result.fit), self.result.summary
        return pd.DataFrame({
            "covariate": boot.index,
            RATIOS[self.spec["options"].get("model", "cox")][0]: fit["hr"].to_numpy(),
            "model-based lower": fit["hr_lower"].to_numpy(),
            "model-based upper": fit["hr_upper"].to_numpy(),
            "bootstrap lower": np.exp(boot["lower"].to_numpy()),
            "bootstrap upper": np.exp(boot["upper"].to_numpy()),
            "non-zero fraction": boot["nonzero_fraction"].to_numpy()})


@dataclass
class BootstrapJob:
    """A snapshot for engine.bootstrap of the current design (the fit's options);
    ``run`` works in any thread."""

    name: str
    spec: dict
    make_cohort: object     # callable() -> engine.Cohort
    options: dict           # keyword arguments of engine.bootstrap

    def run(self, cancel: threading.Event | None = None, progress=None) -> BootstrapRun:
        """The bootstrap; engine.Cancelled between replicates when ``cancel`` is set."""
        with collected() as caught:
            cohort = self.make_cohort()
            res = engine.bootstrap(cohort, progress=progress, cancel=cancel, **self.options)
        return BootstrapRun(self.name, res, self.spec, list(dict.fromkeys(caught)))


def comparison(fits: list[KeptFit]) -> pd.DataFrame:
    """One row per kept fit (for the sensitivity comparison)."""
    return pd.DataFrame([f.row() for f in fits])


def nested_lr_tests(fits: list[KeptFit]) -> pd.DataFrame:
    """The likelihood-ratio test (engine.lr_test, as R's anova(small, big)) of every pair of
    unpenalised fits on the newest fit's data in which one nests the other: the same subjects,
    model, ties and strata, the smaller fit's covariates among the larger's (a covariate split
    at cut points counts as nesting it). One row per pair; pairs that are not nested have none."""
    rows = []
    for small, big in itertools.permutations(same_data(fits), 2):
        try:
            test = engine.lr_test(small.result, big.result)
        except ValueError:  # not nested, penalised or not of the same subjects: no test
            continue
        rows.append({"smaller fit": small.name, "larger fit": big.name,
                     "LR statistic": test.statistic, "df": test.df, "p": test.p})
    return pd.DataFrame(rows)


def same_data(fits: list[KeptFit]) -> list[KeptFit]:
    """The fits on the data of the newest fit (source and recode/filter steps alike): rows
    line up by covariate name, which only means the same thing on the same data."""
    if not fits:
        return []
    data = fits[-1].spec["data"]
    return [f for f in fits if f.spec["data"] == data]


def coefficient_comparison(fits: list[KeptFit], across_data: bool = False) -> pd.DataFrame:
    """Ratios side by side (each fit's exp(coef): HR, sHR or IRR by its model): covariate x
    fit; only the fits on the newest fit's data
    unless ``across_data`` (the user asked to line up fits of different data by name)."""
    fits = fits if across_data else same_data(fits)
    if not fits:
        return pd.DataFrame()
    table = pd.concat({f.name: f.summary["hr"] for f in fits}, axis=1)
    table.index.name = "covariate"
    return table
