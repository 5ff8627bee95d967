"""A user's analysis saved as it changes and offered again after a reload or a server restart.

One file per user in config.state_dir(): the login name under Panel's basic auth, else "local"
(a server on localhost has one user). The file holds the analysis spec (data source, roles,
design, options) and the names of the kept fits; an uploaded file is kept beside it as Parquet,
so the analysis reopens without the upload. Kept fits are not saved: they are re-run with Fit.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import pandas as pd

from . import config
from .loading import DataLoadError
from .script import AnalysisSpec

UPLOAD_KINDS = ("csv", "parquet")
log = logging.getLogger("survscan.app")


def user_file(user: str | None) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", user or "local")
    return config.state_dir() / f"{name}.json"


class Autosaver:
    """Saves one session's analysis for its user whenever the store changes."""

    def __init__(self, store, user: str | None):
        self.store, self.user = store, user
        self.frame_version = None   # data_version of the upload last written as Parquet

    def save(self, *events) -> None:
        """Write the analysis (and, for an upload, its data once as Parquet); a failure is
        logged, never shown: the session goes on without its autosave."""
        try:
            self._write()
        except (OSError, ValueError) as exc:
            log.warning("autosave for %s failed: %s", self.user or "local", exc)

    def _write(self) -> None:
        store, path = self.store, user_file(self.user)
        path.parent.mkdir(parents=True, exist_ok=True)
        spec = store.spec()
        if spec["data"].get("kind") in UPLOAD_KINDS and store.data is not None:
            if self.frame_version != store.data_version:
                store.data.to_parquet(path.with_suffix(".parquet"))
                self.frame_version = store.data_version
        record = {"spec": spec, "saved": time.strftime("%Y-%m-%d %H:%M"),
                  "fits": [f.name for f in store.fits]}
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(record))
        temporary.replace(path)


def load(user: str | None) -> dict | None:
    """The saved record of ``user`` ({spec, saved, fits}), or None (none, or unreadable)."""
    path = user_file(user)
    try:
        record = json.loads(path.read_text())
        AnalysisSpec.from_dict(record["spec"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record


def describe(record: dict) -> str:
    """One line for the offer: what the saved analysis holds."""
    spec = record["spec"]
    fits = len(record.get("fits", []))
    return (f"{spec['data'].get('label', 'data')}, {len(spec['roles']['covariates'])} "
            f"covariate(s), {spec['options']['model']} model"
            + (f", {fits} kept fit(s) to re-run" if fits else "") + f" (saved {record['saved']})")


def restore(store, record: dict, user: str | None) -> None:
    """Reopen the saved data and set its roles, design and options; DataLoadError when the data
    cannot be reopened (a query now refused, a missing file)."""
    spec = AnalysisSpec.from_dict(record["spec"])
    data, kind = spec.data, spec.data.get("kind")
    if kind == "sample":
        store.load_sample(data["name"])
    elif kind == "duckdb":
        store.load_duckdb(data.get("path", ""), data["sql"])
    elif kind == "simulated":
        store.load_simulated(data["n"], data["p"], data["density"], data["n_strata"],
                             data["seed"])
    elif kind in UPLOAD_KINDS:
        frame = user_file(user).with_suffix(".parquet")
        if not frame.exists():
            raise DataLoadError(f"the saved copy of {data.get('name')!r} is gone; upload it again")
        store.load_frame(pd.read_parquet(frame), dict(data))
    else:
        raise DataLoadError(f"data of kind {kind!r} cannot be reopened; load it again")
    roles, options = spec.roles, spec.options
    store.param.update(**{k: roles[k] for k in ("time", "start", "event", "event_codes",
                                                "treatment", "covariates", "strata", "id",
                                                "weights")})
    store.param.update(cut_points=dict(spec.design.get("cut_points", {})),
                       model=options["model"], penalty=options["penalty"],
                       strength=float(options["strength"]),
                       unpenalized=list(options["unpenalized"]), solver=options["solver"])
    if options["model"] == "cox":
        store.ties = options["ties"]
    if options.get("cause") is not None:
        store.cause = int(options["cause"])
    if options["backend"] in store.param.backend.objects:
        store.backend = options["backend"]
