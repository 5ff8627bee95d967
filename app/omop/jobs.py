"""The OMOP study's job: a snapshot of the page's settings that a worker thread runs
(engine.cdm.run_study), and the finished study, whose PS-stratified outcome model joins the
kept fits.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ..survival.jobs import KeptFit
from ..data.loading import concept_names, open_omop
from ..shell.caught_warnings import collected

STUDY_FIT_NAME = "OMOP: PS-stratified"


@dataclass
class StudyRun:
    """A finished OMOP study: engine.cdm's StudyResult, the concept names and its settings."""

    result: object          # engine.cdm.StudyResult
    names: dict             # concept_id -> name
    settings: dict
    elapsed: float

    def label(self, concept_id: int) -> str:
        return f"{self.names.get(int(concept_id), 'unknown concept')} ({concept_id})"

    def stratified_fit(self) -> KeptFit:
        """The PS-stratified outcome model as a kept fit (covariate: treatment, target = 1)."""
        s = self.settings
        key = next(k for k in self.result.fits if k.startswith("PS stratified"))
        res = self.result.fits[key]
        label = (f"OMOP {s['database']}: {self.label(s['target'])} vs "
                 f"{self.label(s['comparator'])}, outcome {self.label(s['outcome'])}")
        spec = {"survscan": 1,
                "data": {"kind": "omop", "label": label, **s},
                "roles": {"time": "time", "start": None, "event": "event", "event_codes": [],
                          "treatment": "treatment", "covariates": ["treatment"],
                          "strata": ["ps_stratum"], "id": None, "weights": None},
                "design": {"cut_points": {}},
                "options": {"model": "cox", "ties": res.spec.get("ties", "breslow"),
                            "penalty": "none", "cause": None, "strength": 0.0,
                            "unpenalized": [], "backend": "cpu", "solver": "auto"}}
        return KeptFit(STUDY_FIT_NAME, res, res.summary, spec, self.elapsed,
                       n_strata=int(self.result.cohort["ps_stratum"].nunique()))


@dataclass
class StudyJob:
    """A snapshot of the OMOP tab's settings; ``run`` works in any thread."""

    path: str
    settings: dict

    def concept_names(self) -> dict:
        con = open_omop(self.path)
        try:
            return concept_names(con, [self.settings[k] for k in ("target", "comparator",
                                                                   "outcome")])
        finally:
            con.close()

    def run(self, cancel: threading.Event | None = None, progress=None) -> StudyRun:
        """The study; ``progress(done, total, step)`` before each of its steps (named as in
        engine.cdm.STUDY_STEPS); engine.Cancelled between steps once ``cancel`` is set."""
        from engine.cdm import STUDY_STEPS, run_study

        t0 = time.perf_counter()
        s = self.settings
        steps = None if progress is None else (lambda k, n: progress(k, n, STUDY_STEPS[k]))
        con = open_omop(self.path)
        try:
            names = concept_names(con, [s["target"], s["comparator"], s["outcome"]])
            with collected():  # the study's warnings are not shown
                result = run_study(con, s["target"], s["comparator"], s["outcome"],
                                   ps_strata=s["ps_strata"], match_ratio=s["match_ratio"],
                                   caliper=s["caliper"], prior_observation=s["prior_observation"],
                                   risk_window_end=s["risk_window_end"],
                                   restrict_to_common_period=s.get(
                                       "restrict_to_common_period", False),
                                   censor_at_new_risk_window=s.get(
                                       "censor_at_new_risk_window", False),
                                   cancel=cancel, progress=steps)
        finally:
            con.close()
        return StudyRun(result, names, dict(s), time.perf_counter() - t0)
