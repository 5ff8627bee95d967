"""One analysis as one file: the .survscan zip the app downloads, opens again and autosaves.

Inside the zip:
  analysis.json      the format version, the analysis' name, when it was saved, its spec (data
                     source, roles, design, options: script.AnalysisSpec), the settings of the
                     cross-validation and OMOP forms, and one entry per kept fit (name, kind,
                     spec, seconds, n_strata, its data file and its table file)
  data/<k>.parquet   an uploaded data set (the current one and any other a kept fit read);
                     samples, DuckDB queries and simulated cohorts are saved by reference
  fits/<k>.csv       each kept fit's coefficient table (its summary) as the app showed it

Reading checks what a hostile file could hold (a zip bomb, unknown members, another version,
a spec with missing parts) and raises AnalysisFileError with a message for the user. Refitting
the kept fits from their specs is reopen.py's work; this module neither fits nor calls the
engine.
"""

from __future__ import annotations

import io
import json
import math
import re
import time
import zipfile
from dataclasses import dataclass, field

import pandas as pd

from ..data.script import AnalysisSpec
from ..omop.state import SETTINGS as OMOP_SETTINGS
from ..shell import config

FORMAT = 1
SUFFIX = ".survscan"
UPLOAD_KINDS = ("csv", "parquet")
WORKBENCH_SETTINGS = ("cv_folds", "cv_grid")
# the form settings the file keeps: the workbench's, and the OMOP page's as omop_<setting>
SETTINGS = (*WORKBENCH_SETTINGS, *(f"omop_{k}" for k in OMOP_SETTINGS))
MEMBER = re.compile(r"^(analysis\.json|data/\d+\.parquet|fits/\d+\.csv)$")


class AnalysisFileError(ValueError):
    """A file the app cannot open as an analysis; the message is for the user."""


@dataclass
class SavedFit:
    """A kept fit as the file holds it: what was asked (spec) and the table it gave."""

    name: str
    kind: str                   # "fit" | "cv" (a cross-validation's refit) | "study" (OMOP)
    spec: dict
    table: pd.DataFrame         # the fit's summary
    elapsed: float = 0.0
    n_strata: int = 1
    frame: pd.DataFrame | None = None   # the uploaded data it read (uploads only)


@dataclass
class Analysis:
    """One analysis: the current data and choices, the form settings and the kept fits."""

    name: str
    spec: dict
    settings: dict = field(default_factory=dict)
    frame: pd.DataFrame | None = None   # the current data, when it is an upload
    fits: list[SavedFit] = field(default_factory=list)
    cv: str | None = None       # the fit whose cross-validation curve Results shows
    study: bool = False         # the OMOP tab shows a study
    saved: str = ""

    def describe(self) -> str:
        """One line: what the analysis holds."""
        spec = self.spec
        fits = len(self.fits)
        return (f"{spec['data'].get('label', 'data')}, {len(spec['roles']['covariates'])} "
                f"covariate(s), {spec['options']['model']} model"
                + (f", {fits} kept fit(s)" if fits else "")
                + (f" (saved {self.saved})" if self.saved else ""))


def fit_kind(spec: dict) -> str:
    if spec["data"].get("kind") == "omop":
        return "study"
    return "cv" if "cross_validated" in spec["options"] else "fit"


def capture(store, workbench, omop, name: str) -> Analysis:
    """The session's analysis (the store's data, choices and settings, the workbench's kept
    fits and cross-validation, the OMOP page's settings and whether it shows a study) under
    ``name``."""
    spec = store.spec()
    upload = spec["data"].get("kind") in UPLOAD_KINDS
    fits = [SavedFit(f.name, fit_kind(f.spec), f.spec, f.summary, float(f.elapsed),
                     int(f.n_strata), getattr(f, "frame", None)) for f in workbench.fits]
    settings = {**{k: getattr(workbench, k) for k in WORKBENCH_SETTINGS},
                **{f"omop_{k}": getattr(omop, k) for k in OMOP_SETTINGS}}
    return Analysis(name=name, spec=spec, settings=settings,
                    frame=store.data if upload else None, fits=fits,
                    cv=workbench.cv.name if workbench.cv is not None else None,
                    study=omop.study is not None)


def write(analysis: Analysis, parquet_cache: dict | None = None) -> bytes:
    """The analysis as .survscan bytes. ``parquet_cache`` (id(frame) -> bytes), when given,
    spares writing the same upload again (autosave writes on every change)."""
    frames: dict[int, str] = {}
    members: dict[str, bytes] = {}

    def data_file(frame):
        if frame is None:
            return None
        if id(frame) not in frames:
            path = f"data/{len(frames)}.parquet"
            frames[id(frame)] = path
            if parquet_cache is not None and id(frame) in parquet_cache:
                members[path] = parquet_cache[id(frame)][1]
            else:
                buffer = io.BytesIO()
                frame.to_parquet(buffer)
                members[path] = buffer.getvalue()
                if parquet_cache is not None:  # the frame is held so its id stays its own
                    parquet_cache[id(frame)] = (frame, members[path])
        return frames[id(frame)]

    fits = []
    for k, f in enumerate(analysis.fits):
        members[f"fits/{k}.csv"] = f.table.to_csv().encode()
        fits.append({"name": f.name, "kind": f.kind, "spec": f.spec, "elapsed": f.elapsed,
                     "n_strata": f.n_strata, "data_file": data_file(f.frame),
                     "table": f"fits/{k}.csv"})
    record = {"survscan_file": FORMAT, "name": analysis.name,
              "saved": time.strftime("%Y-%m-%d %H:%M"), "spec": analysis.spec,
              "data_file": data_file(analysis.frame), "settings": analysis.settings,
              "cv": analysis.cv, "study": analysis.study, "fits": fits}
    if parquet_cache is not None:  # forget uploads no longer part of the analysis
        for key in set(parquet_cache) - set(frames):
            del parquet_cache[key]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("analysis.json", json.dumps(record, indent=1), zipfile.ZIP_DEFLATED)
        for path, content in members.items():
            z.writestr(path, content, zipfile.ZIP_DEFLATED if path.endswith(".csv")
                       else zipfile.ZIP_STORED)  # Parquet is compressed already
    return buffer.getvalue()


def max_unpacked_bytes() -> float:
    """The most an analysis file may unpack to: four times the upload limit."""
    return 4 * config.max_upload_mb() * 1e6


def read(content: bytes, filename: str = "the file") -> Analysis:
    """The Analysis in .survscan bytes; AnalysisFileError saying what is wrong otherwise."""
    try:
        z = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError):
        raise AnalysisFileError(f"{filename!r} is not a survscan analysis file (.survscan, "
                                "saved by the app)") from None
    with z:
        infos = z.infolist()
        strange = [i.filename for i in infos if not MEMBER.match(i.filename)]
        if strange or "analysis.json" not in z.namelist():
            raise AnalysisFileError(f"{filename!r} is not a survscan analysis file: it holds "
                                    f"{strange[:3] or 'no analysis.json'}")
        unpacked = sum(i.file_size for i in infos)
        if unpacked > max_unpacked_bytes():
            raise AnalysisFileError(
                f"{filename!r} unpacks to {unpacked / 1e6:.1f} MB, more than this server's "
                f"limit of {max_unpacked_bytes() / 1e6:g} MB for an analysis file")
        try:
            record = json.loads(z.read("analysis.json"))
            return _analysis(record, z, filename)
        except (KeyError, TypeError, ValueError, OSError, zipfile.BadZipFile) as exc:
            if isinstance(exc, AnalysisFileError):
                raise
            raise AnalysisFileError(f"{filename!r} is damaged: {_first_line(exc)}") from None


def _analysis(record, z, filename) -> Analysis:
    if not isinstance(record, dict) or record.get("survscan_file") != FORMAT:
        raise AnalysisFileError(f"{filename!r} is not a survscan analysis file of format "
                                f"{FORMAT} (saved by another version of the app?)")
    frames: dict[str, pd.DataFrame] = {}

    def frame(path):
        if path is None:
            return None
        if path not in frames:
            frames[path] = pd.read_parquet(io.BytesIO(z.read(path)))
        return frames[path]

    fits = []
    for entry in record["fits"]:
        spec = AnalysisSpec.from_dict(entry["spec"]).to_dict()
        if entry["kind"] != fit_kind(spec):
            raise ValueError(f"fit {entry['name']!r} is of kind {entry['kind']!r}")
        elapsed = float(entry["elapsed"])
        if not math.isfinite(elapsed):
            raise ValueError(f"fit {entry['name']!r} has no finite time")
        table = pd.read_csv(io.BytesIO(z.read(entry["table"])), index_col=0,
                            float_precision="round_trip")
        fits.append(SavedFit(str(entry["name"]), entry["kind"], spec, table, elapsed,
                             int(entry["n_strata"]), frame(entry["data_file"])))
    names = [f.name for f in fits]
    if len(set(names)) != len(names):
        raise ValueError("two kept fits have one name")
    settings = {k: v for k, v in dict(record["settings"]).items() if k in SETTINGS}
    cv = record["cv"]
    if cv is not None and cv not in names:
        raise ValueError(f"the cross-validation {cv!r} has no kept fit")
    return Analysis(name=str(record["name"]),
                    spec=AnalysisSpec.from_dict(record["spec"]).to_dict(), settings=settings,
                    frame=frame(record["data_file"]), fits=fits, cv=cv,
                    study=bool(record["study"]), saved=str(record["saved"]))


def file_name(name: str) -> str:
    """A safe download name for the analysis ``name``."""
    return (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "analysis") + SUFFIX


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
