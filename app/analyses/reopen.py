"""Reopening a saved analysis (analysis_file.Analysis): its data loaded again, its kept fits
refitted from their specs, all in a staging Store, Workbench and OMOP state that a session's then
take over in one update (named.put).

Kept fits are refitted, not read back from their saved tables: the views need the engine's
whole result (standard errors, the PH check, residuals), and a refit of the same data with the
same options is deterministic, so its numbers equal the saved ones bit for bit. The saved
tables are compared with the refits and any difference is reported. A cross-validation is run
again (its refit is the kept fit), an OMOP study too. Runs in any thread.
"""

from __future__ import annotations

import json

import pandas as pd

from ..data.loading import DataLoadError
from ..data.memory import check_simulation
from ..data.store import Store
from ..omop.jobs import StudyJob
from ..omop.state import OmopState
from ..survival.state import Workbench
from .analysis_file import UPLOAD_KINDS, WORKBENCH_SETTINGS, Analysis

ROLE_KEYS = ("time", "start", "event", "event_codes", "treatment", "covariates", "strata", "id",
             "weights")


def load_source(store: Store, data: dict, frame: pd.DataFrame | None) -> None:
    """Open the data that ``data`` (a spec's data source) names: a sample, a DuckDB query (in
    the sandbox, as typed), a simulated cohort, or the saved copy of an upload."""
    kind = data.get("kind")
    if kind == "sample":
        store.load_sample(data["name"])
    elif kind == "duckdb":
        store.load_duckdb(data.get("path", ""), data["sql"])
    elif kind == "simulated":
        check_simulation(int(data["n"]), int(data["p"]), float(data["density"]))
        store.load_simulated(data["n"], data["p"], data["density"], data["n_strata"],
                             data["seed"])
    elif kind in UPLOAD_KINDS:
        if frame is None:
            raise DataLoadError(f"the saved copy of {data.get('name')!r} is missing; upload "
                                "it again")
        store.load_frame(frame, dict(data))
    else:
        raise DataLoadError(f"data of kind {kind!r} cannot be reopened; load it again")
    store.apply_data_steps(list(data.get("steps", [])))


def apply_spec(store: Store, spec: dict) -> None:
    """Set the roles, design and options of ``spec`` on a store whose data are loaded."""
    roles, options = spec["roles"], spec["options"]
    store.param.update(**{k: roles[k] for k in ROLE_KEYS})
    store.param.update(cut_points=dict(spec["design"].get("cut_points", {})),
                       bands=list(spec["design"].get("bands", [])),
                       forms=dict(spec["design"].get("forms", {})),
                       interactions=[list(p) for p in spec["design"].get("interactions", [])],
                       model=options["model"], penalty=options["penalty"],
                       strength=float(options["strength"]),
                       unpenalized=list(options["unpenalized"]), solver=options["solver"])
    if options["model"] == "cox":
        store.ties = options["ties"]
    if options.get("cause") is not None:
        store.cause = int(options["cause"])
    store.missing = options.get("missing", "stop")
    if options["backend"] in store.param.backend.objects:
        store.backend = options["backend"]
    if options.get("strength_as") is not None:   # the penalty scale: a fraction of lambda_max,
        store.param.update(strength_as=options["strength_as"],  # computed again by the refit
                           strength_fraction=float(options["strength_fraction"]))


def rebuild(analysis: Analysis) -> tuple[Store, Workbench, OmopState, list[str]]:
    """(a staging Store holding the analysis, its Workbench with the fits refitted, the staging
    OMOP state with its settings and study, the names of refits whose numbers differ from the
    saved tables). DataLoadError when data cannot be opened again."""
    staged = Store()
    bench = Workbench(store=staged)
    bench.param.update(**{k: v for k, v in analysis.settings.items() if k in WORKBENCH_SETTINGS})
    omop = OmopState(workbench=bench)
    omop.param.update(**{k.removeprefix("omop_"): v for k, v in analysis.settings.items()
                         if k.startswith("omop_")})
    workers: dict[str, Workbench] = {}  # one per data source: an upload is read once

    def worker(data, frame):
        key = json.dumps(data, sort_keys=True) + str(id(frame))
        if key not in workers:
            workers[key] = Workbench(store=Store())
            load_source(workers[key].store, data, frame)
        return workers[key]

    fits, differ, cv, study = [], [], None, None
    for saved in analysis.fits:
        if saved.kind == "study":
            settings = {k: v for k, v in saved.spec["data"].items() if k not in ("kind", "label")}
            path = "" if settings["database"] == "Eunomia GiBleed" else settings["database"]
            study = StudyJob(path, settings).run()
            kept = study.stratified_fit()
        else:
            work = worker(saved.spec["data"], saved.frame)
            apply_spec(work.store, saved.spec)
            if saved.kind == "cv":
                done = saved.spec["options"]["cross_validated"]
                work.param.update(cv_folds=int(done["folds"]), cv_grid=int(done["grid"]))
                run, kept = work.cv_job(saved.name).run()
                if saved.name == analysis.cv:
                    cv = run
            else:
                kept = work.fit_job(saved.name).run()
        kept.elapsed = saved.elapsed
        if not same_numbers(kept.summary, saved.table):
            differ.append(saved.name)
        fits.append(kept)
    current = worker(analysis.spec["data"], analysis.frame).store
    apply_spec(current, analysis.spec)
    staged.param.update(data=current.data, raw_data=current.raw_data,
                        data_steps=current.data_steps, simulated=current.simulated,
                        source=current.source, columns=current.columns)
    apply_spec(staged, analysis.spec)
    bench.param.update(fits=fits, cv=cv)
    omop.study = study
    return staged, bench, omop, differ


def same_numbers(table: pd.DataFrame, saved: pd.DataFrame) -> bool:
    """Whether a refit's summary equals the saved one exactly (NaN equal to NaN)."""
    try:
        pd.testing.assert_frame_equal(table, saved, check_exact=True, check_names=False,
                                      check_dtype=False)
    except AssertionError:
        return False
    return True
