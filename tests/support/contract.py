"""The cases every (likelihood, backend) pair joins once: tests/engine/regression/test_contract.py checks each the
same way.  A new likelihood is one line in CASES (and one in engine/backends REGISTRY)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

import engine

ROSSI = ["fin", "age", "race", "wexp", "mar", "paro", "prio"]


@dataclass(frozen=True)
class Case:
    """One likelihood on one data set: ``frame()`` the data, ``cohort(frame)`` the Cohort,
    ``subject`` the column whose rows form one subject (None: each row is one)."""

    name: str
    options: dict
    frame: Callable[[], pd.DataFrame]
    cohort: Callable[[pd.DataFrame], object]
    subject: str | None = None
    fit: dict = field(default_factory=dict)


def _rossi():
    return engine.datasets.load_rossi()


def _heart():
    return engine.datasets.load_stanford_heart()


def _eras():
    return engine.simulate_sccs(60, 5, eras_per_case=6.0, n_signals=3, seed=2).to_frame()


def _bmt():
    df = engine.datasets.load_bmtcrr()
    return df.assign(male=(df["Sex"] == "M").astype(float),
                     aml=(df["D"] == "AML").astype(float))


CASES = [
    Case("cox breslow", {"model": "cox", "ties": "breslow"}, _rossi,
         lambda df: engine.Cohort.from_frame(df, time="week", event="arrest", covariates=ROSSI)),
    Case("cox efron", {"model": "cox", "ties": "efron"}, _rossi,
         lambda df: engine.Cohort.from_frame(df, time="week", event="arrest", covariates=ROSSI)),
    Case("cox strata", {"model": "cox", "ties": "efron"}, _rossi,
         lambda df: engine.Cohort.from_frame(df, time="week", event="arrest",
                                             covariates=[c for c in ROSSI if c != "race"],
                                             strata="race")),
    Case("cox entry times", {"model": "cox", "ties": "efron"}, _heart,
         lambda df: engine.Cohort.from_frame(df, time="stop", event="event", start="start",
                                             id="id", covariates=["age", "year", "surgery",
                                                                  "transplant"]),
         subject="id"),
    Case("fine_gray", {"model": "fine_gray", "cause": 1}, _bmt,
         lambda df: engine.Cohort.from_frame(df, time="ftime", event="Status",
                                             covariates=["Age", "male", "aml"],
                                             competing_risks=True)),
    Case("logistic", {"model": "logistic"}, _rossi,
         lambda df: engine.Cohort.from_frame(df, time="week", event="arrest", covariates=ROSSI)),
    Case("poisson", {"model": "poisson"}, _heart,
         lambda df: engine.Cohort.from_frame(df, time="stop", event="event", start="start",
                                             id="id", covariates=["age", "year", "surgery",
                                                                  "transplant"]),
         subject="id"),
    Case("sccs", {"model": "sccs"}, _eras,
         lambda df: engine.SccsData.from_frame(df, case="case", length="length",
                                               events="events",
                                               covariates=[c for c in df.columns
                                                           if c not in ("case", "length",
                                                                        "events")]),
         subject="case"),
]


def problem(case: Case, frame=None, backend: str = "cpu") -> engine.Problem:
    frame = case.frame() if frame is None else frame
    options = engine.FitOptions(backend=backend, tol=1e-12, **case.options)
    return engine.Problem.from_cohort(case.cohort(frame), options)


def away_from_zero(p: int, seed: int = 0) -> np.ndarray:
    """A coefficient vector away from zero (every term of the derivatives matters) but small
    enough that exp(eta) stays moderate."""
    return np.random.default_rng(seed).normal(0.0, 0.05, p)
