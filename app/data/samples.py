"""The bundled samples the app offers, with the column roles it sets when one is opened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from engine import datasets


@dataclass(frozen=True)
class Sample:
    """A bundled sample and the column roles the app assigns when it is opened."""

    load: Callable[[], pd.DataFrame]
    about: str
    time: str
    event: str
    treatment: str
    covariates: tuple[str, ...]
    start: str | None = None
    id: str | None = None
    event_codes: tuple = field(default=())  # empty: the event column is already 0/1
    missing: str = "stop"                   # "drop": opened as a complete-case analysis


SAMPLES: dict[str, Sample] = {
    "rossi": Sample(
        datasets.load_rossi,
        "Rossi recidivism: 432 released prisoners, arrest within 52 weeks; treatment = financial aid.",
        time="week", event="arrest", treatment="fin",
        covariates=("fin", "age", "race", "wexp", "mar", "paro", "prio"),
    ),
    "stanford_heart": Sample(
        datasets.load_stanford_heart,
        "Stanford heart transplants: 103 patients in (start, stop] episodes; transplant is time-varying.",
        time="stop", event="event", treatment="surgery",
        covariates=("age", "year", "surgery", "transplant"), start="start", id="id",
    ),
    "jasa1": Sample(
        datasets.load_jasa1,
        "Stanford heart transplants as in Kalbfleisch & Prentice, (start, stop] episodes.",
        time="stop", event="event", treatment="surgery",
        covariates=("age", "year", "surgery", "transplant"), start="start", id="id",
    ),
    "mgus2": Sample(
        datasets.load_mgus2,
        "MGUS: 1,384 Mayo Clinic patients, death in months; sex is one-hot encoded by the engine.",
        time="futime", event="death", treatment="sex", covariates=("age", "sex"),
    ),
    "bmtcrr": Sample(
        datasets.load_bmtcrr,
        "Bone-marrow transplants: 177 patients; Status 1 = relapse, 2 = death (both count as events here).",
        time="ftime", event="Status", treatment="Source", covariates=("Age", "Sex", "Source"),
        event_codes=(1, 2),
    ),
    "lung": Sample(
        datasets.load_lung,
        "Advanced lung cancer (NCCTG): 228 patients, death in days; ph.ecog, wt.loss and others "
        "have missing values, so it opens as a complete-case analysis (Data tab: rows with "
        "missing values); Results' Missing data page imputes them.",
        time="time", event="status", treatment="sex", covariates=("age", "sex", "ph.ecog"),
        missing="drop",
    ),
}

# Column names that usually play a role, tried in order when a file is opened.
ROLE_GUESSES = {
    "time": ("time", "stop", "futime", "ftime", "week", "weeks", "days", "duration", "tstop"),
    "event": ("event", "status", "arrest", "death", "dead", "fail", "failure", "censor"),
    "start": ("start", "tstart", "entry"),
    "id": ("id", "subject", "patient_id", "person_id"),
    "treatment": ("treatment", "treat", "trt", "exposure", "fin", "group", "arm"),
}
