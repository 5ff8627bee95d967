"""The SCCS page's job: build the eras, fit (or cross-validate the penalty), bootstrap the
selection frequencies, or run the Eunomia study, in a worker thread; and its finished run.

Every number comes from the engine (SccsData, fit, cross_validate, bootstrap,
cdm.sccs_study); here they are only gathered into the tables the page shows.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pandas as pd

import engine

from ..data.loading import open_omop
from ..shell.caught_warnings import collected

PROBE = "end_of_observation"
IRR_COLUMNS = ["covariate", "irr", "irr_lower", "irr_upper", "p", "coef", "se", "penalized"]


def make_sccs(spec: dict, frame: pd.DataFrame | None):
    """The SccsData of a spec (the same calls the exported script makes)."""
    data, design = spec["data"], spec["design"]
    if data["kind"] == "simulated":
        return engine.simulate_sccs(data["n_cases"], data["n_drugs"], seed=data["seed"])
    if spec["layout"] == "eras":
        return engine.SccsData.from_frame(frame, case=design["case"], length=design["length"],
                                          events=design["events"],
                                          covariates=design["covariates"])
    return engine.SccsData.from_cases(frame, **design)


def diagnostic_sccs(spec: dict, frame: pd.DataFrame):
    """The diagnostic model of raw case histories: the design plus the end-of-observation
    probe, a pseudo-exposure starting on each case's last day with the window
    (1 - probe_days, 0), i.e. its last ``probe_days`` days (an IRR far from 1 means events
    shorten observation).  None for eras or without a probe."""
    days = spec["options"].get("probe_days", 0)
    if spec["layout"] != "cases" or not days:
        return None
    d = spec["design"]
    probe = pd.DataFrame({"case": frame[d["case"]], "drug": PROBE,
                          "start": frame[d["obs_end"]]}).drop_duplicates()
    windows = {**d["risk_windows"], PROBE: [(1 - days, 0)]}
    return engine.SccsData.from_cases(frame, **{**d, "risk_windows": windows},
                                      exposures=probe)


def unpenalized_columns(names: list[str], interest: str) -> list[str]:
    """The exposure of interest's columns (its windows) and the age groups: the penalty
    regularises only "all other drugs", as multi-drug SCCS does."""
    keep = [n for n in names if n.startswith("age[")]
    if interest:
        keep += [n for n in names if n == interest or n.startswith(interest + "[")]
    return keep


def penalty_of(options: dict):
    kind = options["penalty"]
    if kind == "none":
        return None
    return (engine.L1 if kind == "L1" else engine.L2)(options["strength"])


@dataclass
class SccsRun:
    """A finished SCCS run: the fit, and what came with it."""

    name: str
    spec: dict
    fit: object                      # engine.FitResult (ratio column: irr)
    sccs: object                     # engine.SccsData
    elapsed: float
    cv: object = None                # engine.CrossValidationResult
    boot: object = None              # engine.BootstrapResult
    study: object = None             # engine.cdm.SccsStudyResult
    diagnostic: object = None        # engine.FitResult of the probe model (case histories)
    time_to_event: pd.DataFrame | None = None  # engine.sccs_time_to_event (case histories)
    warnings: list = field(default_factory=list)

    def irr_table(self) -> pd.DataFrame:
        """One row per column of the model: IRR, Wald CI, p, coef, se; with a bootstrap the
        selection frequency P(beta_j != 0) (Suchard2013, Fig. 3)."""
        table = self.fit.summary.reset_index()[IRR_COLUMNS].copy()
        if self.boot is not None:
            table["selected"] = self.boot.summary["nonzero_fraction"].reindex(
                table["covariate"]).to_numpy()
        return table

    def exposure_table(self) -> pd.DataFrame:
        """The columns that are not age groups (the drugs' windows), for the forest plot."""
        table = self.irr_table()
        return table[~table["covariate"].str.startswith("age[")].reset_index(drop=True)

    def days_to_event(self) -> pd.DataFrame | None:
        """Days from exposure start to each event: the CDM study's, or for case histories
        those of the exposure of interest (else the first exposure column)."""
        if self.study is not None:
            return self.study.time_to_event
        if self.time_to_event is None:
            return None
        drugs = list(dict.fromkeys(self.time_to_event["drug"]))
        drug = self.spec["options"]["interest"] if self.spec["options"]["interest"] in drugs \
            else drugs[0]
        return self.time_to_event[self.time_to_event["drug"] == drug]

    def pre_exposure(self) -> pd.DataFrame | None:
        """The diagnostic IRRs: the drugs' windows (a pre-exposure window among them) and the
        end-of-observation probe, from Eunomia's diagnostic model or the case histories'
        probe model; without one, the windows of drugs with a pre-exposure window.  None
        when the design has neither."""
        if self.study is not None:
            return self.study.pre_exposure.reset_index()
        if self.diagnostic is not None:
            table = self.diagnostic.summary.reset_index()[IRR_COLUMNS]
            return table[~table["covariate"].str.startswith("age[")].reset_index(drop=True)
        pre = {d for d, ws in self.spec["design"].get("risk_windows", {}).items()
               if any(isinstance(w[0], int) and w[0] < 0 for w in ws)}
        if not pre:
            return None
        table = self.irr_table()
        return table[table["covariate"].str.split("[").str[0].isin(pre)].reset_index(drop=True)


@dataclass
class SccsJob:
    """A snapshot of the page; ``run`` works in any thread."""

    name: str
    spec: dict
    frame: pd.DataFrame | None

    def run(self, cancel: threading.Event | None = None, progress=None) -> SccsRun:
        """``progress(stage, done, total)``; engine.Cancelled on Cancel."""
        t0 = time.perf_counter()
        report = progress or (lambda stage, done, total: None)
        with collected() as caught:
            if self.spec["layout"] == "cdm":
                run = self._study(report)
            else:
                run = self._fit(cancel, report)
        run.elapsed = time.perf_counter() - t0
        run.warnings = list(dict.fromkeys(caught))
        return run

    def _fit(self, cancel, report) -> SccsRun:
        opts = self.spec["options"]
        report("building the eras", 0, 0)
        sccs = make_sccs(self.spec, self.frame)
        if cancel is not None and cancel.is_set():
            raise engine.Cancelled(f"{self.name} cancelled before the first iteration")
        penalty = penalty_of(opts)
        unpenalized = unpenalized_columns(sccs.names, opts["interest"]) if penalty else []
        cv = boot = None
        if penalty is not None and opts["cv_folds"]:
            cv = engine.cross_validate(
                sccs, model="sccs", penalty=opts["penalty"].lower(), folds=opts["cv_folds"],
                seed=opts["seed"], unpenalized=unpenalized, cancel=cancel,
                progress=lambda k, total: report("cross-validation fold fits", k, total))
            penalty, res = cv.penalty, cv.fit
        else:
            res = engine.fit(sccs, model="sccs", penalty=penalty, unpenalized=unpenalized,
                             cancel=cancel,
                             progress=lambda k, total: report("fitting: iteration", k, 0))
        if opts["bootstrap"]:
            boot = engine.bootstrap(
                sccs, model="sccs", penalty=penalty, replicates=opts["bootstrap"],
                seed=opts["seed"], unpenalized=unpenalized, cancel=cancel,
                progress=lambda k, total: report("bootstrap replicates", k, total))
        diagnostic = None
        probe = diagnostic_sccs(self.spec, self.frame)
        if probe is not None:
            report("fitting the end-of-observation probe model", 0, 0)
            diagnostic = engine.fit(probe, model="sccs")
        tte = None
        if self.spec["layout"] == "cases":
            d = self.spec["design"]
            tte = engine.sccs_time_to_event(self.frame, d["case"], d["event_times"],
                                            d["exposure_start"])
        return SccsRun(self.name, self.spec, res, sccs, 0.0, cv=cv, boot=boot,
                       diagnostic=diagnostic, time_to_event=tte)

    def _study(self, report) -> SccsRun:
        from engine import cdm

        d, opts = self.spec["design"], self.spec["options"]
        report("querying the CDM and fitting", 0, 0)
        con = open_omop("")
        try:
            study = cdm.sccs_study(
                con, exposure=d["exposure"], outcome=d["outcome"],
                risk_window=tuple(d["risk_window"]),
                pre_window=None if d["pre_window"] is None else tuple(d["pre_window"]),
                probe_days=d["probe_days"], age_cuts=d["age_cuts"],
                other_drugs=d["other_drugs"], penalty=penalty_of(opts))
        finally:
            con.close()
        return SccsRun(self.name, self.spec, study.fit, study.sccs, 0.0, study=study)
