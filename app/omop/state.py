"""The OMOP page's state: the study's settings (engine.cdm.run_study's CDM, concepts, windows
and CohortMethod's rules) and the last study run, one per session beside the Store.

Its settings and study are part of an analysis (saved by name, in the analysis file, reopened);
the study's PS-stratified outcome model is kept as a fit in the survival workbench, so it joins
the Results comparison and the exports. No Panel widgets and no numerics here.
"""

from __future__ import annotations

import param

from ..data.loading import DataLoadError, data_path
from ..survival.state import Workbench
from .jobs import StudyJob, StudyRun

CELECOXIB, DICLOFENAC, GI_HAEMORRHAGE = 1118084, 1124300, 192671  # the OHDSI teaching study
# the settings an analysis keeps (the analysis file names them omop_<setting>)
SETTINGS = ("path", "target", "comparator", "outcome", "prior_observation", "risk_window_end",
            "ps_strata", "match_ratio", "caliper", "common_period", "censor_new_window")


class OmopState(param.Parameterized):
    """The settings of the OMOP study and its last run, for one session."""

    workbench = param.ClassSelector(class_=Workbench,
                                    doc="Where the study's stratified fit is kept.")
    path = param.String(default="", doc="DuckDB file or Parquet folder of an OMOP CDM; empty: "
                                        "the bundled Eunomia GiBleed CDM.")
    target = param.Integer(default=CELECOXIB)
    comparator = param.Integer(default=DICLOFENAC)
    outcome = param.Integer(default=GI_HAEMORRHAGE)
    prior_observation = param.Integer(default=183, bounds=(0, None), doc="days")
    risk_window_end = param.Integer(default=30, bounds=(0, None), doc="days")
    ps_strata = param.Integer(default=5, bounds=(1, 20))
    match_ratio = param.Integer(default=1, bounds=(1, 10))
    caliper = param.Number(default=0.2, bounds=(0, None), doc="SDs of the logit PS")
    common_period = param.Boolean(default=False, doc="CohortMethod's restrict to common period")
    censor_new_window = param.Boolean(default=False, doc="CohortMethod's censor at the start of "
                                                         "a new time at risk")
    study = param.Parameter(default=None, doc="The last StudyRun.")

    def settings(self) -> dict:
        """The settings as engine.cdm.run_study takes them (and a kept fit's spec records)."""
        return {"database": self.path.strip() or "Eunomia GiBleed",
                "target": int(self.target), "comparator": int(self.comparator),
                "outcome": int(self.outcome),
                "prior_observation": int(self.prior_observation),
                "risk_window_end": int(self.risk_window_end),
                "ps_strata": int(self.ps_strata), "match_ratio": int(self.match_ratio),
                "caliper": float(self.caliper),
                "restrict_to_common_period": bool(self.common_period),
                "censor_at_new_risk_window": bool(self.censor_new_window)}

    def job(self) -> StudyJob:
        """Snapshot of the settings; DataLoadError for settings a study cannot use."""
        s = self.settings()
        if s["target"] == s["comparator"]:
            raise DataLoadError("the target and the comparator must be different concepts")
        if self.path.strip():
            data_path(self.path, "DuckDB file or Parquet folder")
        return StudyJob(self.path, s)

    def keep(self, run: StudyRun) -> None:
        """Show ``run`` and keep its PS-stratified model as a fit (replacing the last study's)."""
        self.study = run
        self.workbench.keep_replacing(run.stratified_fit())
