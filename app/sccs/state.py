"""The SCCS page's state: the loaded case histories or eras, the design (exposures, risk
windows, age groups), the options (penalty, cross-validation, bootstrap) and the last run.

Four sources: the bundled R SCCS datasets (engine.datasets.load_sccs), a CSV upload (raw case
histories as R SCCS holds them, one row per event, or prepared eras), a simulated multi-drug
data set (engine.simulate_sccs) and the Eunomia CDM (engine.cdm.sccs_study).  Nothing here
imports Panel; the text the user types (windows, cut points) is parsed here into the engine's
arguments, with messages that name the field and the fix.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import param

import engine

from ..data.loading import DataLoadError, read_upload
from .jobs import SccsJob

VERSION = 1
PENALTIES = ("none", "L1", "L2")
LAYOUTS = ("cases", "eras")
DICLOFENAC, GI_HAEMORRHAGE = 1124300, 192671  # Eunomia's teaching drug and outcome

# the bundled R SCCS datasets and the design the app proposes for each (R SCCS's examples:
# MMR and ITP with a 0-42 day window and age groups cut at 427, 488, ... days)
SAMPLE_DESIGNS = {
    "itpdat": {"event_times": "itp", "exposures": ["mmr"], "exposure_ends": [],
               "windows": "0..42", "age_cuts": "427, 488, 549, 610, 671",
               "about": "MMR vaccine and idiopathic thrombocytopenic purpura: 44 admissions in "
                        "35 children, ages in days (Miller et al. 2001)"},
    "gidat": {"event_times": "bleed", "exposures": ["ns"], "exposure_ends": ["endns"],
              "windows": "0..end", "age_cuts": "",
              "about": "NSAIDs and GI bleeding: 838 simulated cases, one row per exposure"},
    "hipdat": {"event_times": "frac", "exposures": ["ad"], "exposure_ends": ["endad"],
               "windows": "0..end", "age_cuts": "",
               "about": "antidepressants and hip fracture: 1,000 simulated cases"},
}
_OFFSET = re.compile(r"^(?:-?\d+|end(?:\s*[+-]\s*\d+)?)$")


# ----------------------------------------------------------------------------------------
# the text the user types
def parse_offset(text: str, where: str):
    """'42' -> 42, 'end' / 'end+7' / 'end-3' -> the same string (engine's offsets)."""
    text = text.strip().replace(" ", "")
    if not _OFFSET.match(text):
        raise DataLoadError(f"{where}: {text!r} is not an offset; use whole days (e.g. 0, 42, "
                            "-14) or 'end', 'end+7', 'end-3' (days after the exposure end)")
    return text if text.startswith("end") else int(text)


def parse_window(text: str, where: str) -> tuple:
    """'0..42' -> (0, 42)."""
    parts = text.split("..")
    if len(parts) != 2:
        raise DataLoadError(f"{where}: {text.strip()!r} is not a window; write it as "
                            "start..end, e.g. 0..42 or 0..end")
    return parse_offset(parts[0], where), parse_offset(parts[1], where)


def parse_windows(text: str, drugs: list[str]) -> dict:
    """'0..42, 43..90' (every drug) or 'mmr: 0..42; ns: 0..end' -> drug -> [(a, b), ...]."""
    if not text.strip():
        return {}
    out = {}
    for part in [p for p in text.split(";") if p.strip()]:
        if ":" in part:
            drug, spec = (s.strip() for s in part.split(":", 1))
            if drug not in drugs:
                raise DataLoadError(f"risk windows name {drug!r}, which is not an exposure "
                                    f"column; choose it as an exposure or use one of {drugs}")
            targets = [drug]
        else:
            spec, targets = part, list(drugs)
        windows = [parse_window(w, f"risk windows of {', '.join(targets) or 'the exposures'}")
                   for w in spec.split(",") if w.strip()]
        for d in targets:
            out[d] = windows
    return out


def parse_age_cuts(text: str) -> list[int]:
    """'427, 488' -> [427, 488] (whole days, increasing)."""
    values = []
    for part in [p for p in re.split(r"[,;\s]+", text.strip()) if p]:
        try:
            value = float(part)
        except ValueError:
            raise DataLoadError(f"age group cut point {part!r} is not a number; type whole "
                                "days separated by commas, e.g. 427, 488") from None
        if not math.isfinite(value) or value != int(value):
            raise DataLoadError(f"age group cut point {part!r} must be a whole number of days")
        values.append(int(value))
    if values != sorted(set(values)):
        raise DataLoadError(f"age group cut points {values} must increase; e.g. 427, 488, 549")
    return values


# ----------------------------------------------------------------------------------------
class SccsState(param.Parameterized):
    """Data, design, options and the last run of one session's SCCS page."""

    frame = param.DataFrame(default=None, allow_None=True, doc="Case histories or eras.")
    source = param.Dict(default={}, doc="Where the data came from (spec and script).")
    layout = param.Selector(objects=list(LAYOUTS), default="cases",
                            doc="cases: raw case histories (R SCCS); eras: prepared eras")
    data_version = param.Integer(default=0, doc="Bumped on every load; views redraw on it.")

    # raw case histories (one row per event): SccsData.from_cases
    case = param.String(default="case")
    obs_start = param.String(default="sta")
    obs_end = param.String(default="end")
    event_times = param.String(default="")
    exposures = param.List(default=[], doc="exposure start columns, one per drug")
    exposure_ends = param.List(default=[], doc="exposure end columns, paired by position")
    windows = param.String(default="0..42")
    pre_window = param.String(default="", doc="e.g. -14..-1: a window before every exposure")
    age_cuts = param.String(default="")
    first_event_only = param.Boolean(default=False)
    probe_days = param.Integer(default=30, bounds=(0, None),
                               doc="end-of-observation probe of the diagnostic model (0: none)")
    # prepared eras: SccsData.from_frame
    length = param.String(default="")
    events = param.String(default="")
    covariates = param.List(default=[])

    # Eunomia (engine.cdm.sccs_study)
    cdm_exposure = param.Integer(default=DICLOFENAC)
    cdm_outcome = param.Integer(default=GI_HAEMORRHAGE)
    cdm_window = param.String(default="0..30")
    cdm_pre_window = param.String(default="-30..-1")
    cdm_probe_days = param.Integer(default=30, bounds=(0, None))
    cdm_other_drugs = param.Boolean(default=False)

    # options
    penalty = param.Selector(objects=list(PENALTIES), default="none")
    strength = param.Number(default=1.0, bounds=(0, None))
    interest = param.String(default="", doc="exposure of interest: its windows stay "
                                            "unpenalised (with the age groups)")
    cv_folds = param.Integer(default=0, bounds=(0, 50), doc="0: no cross-validation")
    bootstrap = param.Integer(default=0, bounds=(0, 5000), doc="0: no bootstrap")
    seed = param.Integer(default=0, bounds=(0, None))

    run = param.Parameter(default=None, doc="The last SccsRun.")

    # ------------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        return [] if self.frame is None else [str(c) for c in self.frame.columns]

    def load_sample(self, name: str) -> None:
        """A bundled R SCCS dataset with the design the app proposes for it."""
        if name not in SAMPLE_DESIGNS:
            raise DataLoadError(f"no bundled SCCS dataset {name!r}; choose one of "
                                f"{list(SAMPLE_DESIGNS)}")
        d = SAMPLE_DESIGNS[name]
        self._set_frame(engine.datasets.load_sccs(name), "cases",
                        {"kind": "sample", "name": name, "label": f"R SCCS: {name}"})
        self.param.update(case="case", obs_start="sta", obs_end="end",
                          event_times=d["event_times"], exposures=list(d["exposures"]),
                          exposure_ends=list(d["exposure_ends"]), windows=d["windows"],
                          age_cuts=d["age_cuts"], pre_window="", interest=d["exposures"][0],
                          first_event_only=False, penalty="none", cv_folds=0, bootstrap=0)
        self.data_version += 1

    def load_upload(self, filename: str, content: bytes, layout: str) -> None:
        """A CSV upload of raw case histories or of eras; the design is guessed from R SCCS's
        column names (case, sta, end) and left for the user to check."""
        self.load_frame(read_upload(filename, content), filename, layout)

    def load_frame(self, df: pd.DataFrame, filename: str, layout: str) -> None:
        """An uploaded file already read (read_upload, in a worker thread): see load_upload."""
        self._set_frame(df, layout, {"kind": "csv", "name": filename,
                                     "label": f"file: {filename}"})
        cols = self.columns

        def pick(*names):
            return next((c for c in names if c in cols), "")

        if layout == "cases":
            self.param.update(case=pick("case", "id", "person_id") or cols[0],
                              obs_start=pick("sta", "obs_start", "start"),
                              obs_end=pick("end", "obs_end", "stop"), event_times="",
                              exposures=[], exposure_ends=[], pre_window="", age_cuts="",
                              interest="")
        else:
            case = pick("case", "id", "person_id") or cols[0]
            length = pick("length", "days", "interval")
            events = pick("events", "event", "y", "count")
            self.param.update(case=case, length=length, events=events, interest="",
                              covariates=[c for c in cols if c not in (case, length, events)])
        self.data_version += 1

    def use_simulated(self, n_cases: int, n_drugs: int, seed: int) -> None:
        """engine.simulate_sccs: many drugs, for the forest plot and the L1 selection."""
        if not (1 <= n_cases <= 200_000 and 1 <= n_drugs <= 2_000):
            raise DataLoadError("simulate between 1 and 200,000 cases and 1 to 2,000 drugs")
        self.frame = None
        self.source = {"kind": "simulated", "n_cases": int(n_cases), "n_drugs": int(n_drugs),
                       "seed": int(seed), "label": f"simulated: {n_cases:,} cases, "
                                                   f"{n_drugs:,} drugs (seed {seed})"}
        self.param.update(layout="eras", interest="", run=None, penalty="L1", strength=5.0)
        self.data_version += 1

    def use_eunomia(self) -> None:
        """The bundled Eunomia GiBleed CDM; the study is built by engine.cdm.sccs_study."""
        self.frame = None
        self.source = {"kind": "eunomia", "label": "Eunomia GiBleed CDM"}
        self.param.update(run=None, age_cuts="", penalty="none", cv_folds=0, bootstrap=0)
        self.data_version += 1

    def _set_frame(self, df: pd.DataFrame, layout: str, source: dict) -> None:
        if layout not in LAYOUTS:
            raise DataLoadError(f"layout {layout!r}: choose one of {LAYOUTS}")
        self.param.update(frame=df, layout=layout, source=source, run=None)

    # ------------------------------------------------------------------------------------
    def design(self) -> dict:
        """The design as the engine's arguments; DataLoadError naming the field and the fix."""
        kind = self.source.get("kind")
        if kind is None:
            raise DataLoadError("no data yet: open a bundled dataset, upload a CSV, simulate, "
                                "or choose the Eunomia CDM")
        if kind == "eunomia":
            pre = parse_window(self.cdm_pre_window, "pre-exposure window") \
                if self.cdm_pre_window.strip() else None
            return {"exposure": int(self.cdm_exposure), "outcome": int(self.cdm_outcome),
                    "risk_window": list(parse_window(self.cdm_window, "risk window")),
                    "pre_window": None if pre is None else list(pre),
                    "probe_days": int(self.cdm_probe_days),
                    "age_cuts": parse_age_cuts(self.age_cuts) or None,
                    "other_drugs": bool(self.cdm_other_drugs)}
        if kind == "simulated":
            return {}
        cols = self.columns
        if self.layout == "eras":
            for role in ("case", "length", "events"):
                if getattr(self, role) not in cols:
                    raise DataLoadError(f"choose the {role} column of the eras (one of "
                                        f"{cols[:12]})")
            if not self.covariates:
                raise DataLoadError("choose at least one exposure column of the eras")
            return {"case": self.case, "length": self.length, "events": self.events,
                    "covariates": list(self.covariates)}
        for role, what in (("case", "case id"), ("obs_start", "observation start"),
                           ("obs_end", "observation end"), ("event_times", "event day")):
            if getattr(self, role) not in cols:
                raise DataLoadError(f"choose the {what} column (one of {cols[:12]})")
        if not self.exposures:
            raise DataLoadError("choose at least one exposure start column (e.g. mmr)")
        ends = list(self.exposure_ends)
        if ends and len(ends) != len(self.exposures):
            raise DataLoadError(f"{len(ends)} exposure end column(s) for "
                                f"{len(self.exposures)} exposure(s): choose one end per "
                                "exposure, in the same order, or none")
        windows = parse_windows(self.windows, list(self.exposures))
        for d in self.exposures:
            if d not in windows and d not in dict(zip(self.exposures, ends)):
                raise DataLoadError(f"exposure {d!r} has no risk window and no end column: "
                                    f"type a window (e.g. {d}: 0..42) or choose its end column")
        if self.pre_window.strip():
            pre = parse_window(self.pre_window, "pre-exposure window")
            if not (isinstance(pre[0], int) and isinstance(pre[1], int) and pre[1] < 0):
                raise DataLoadError(f"pre-exposure window {self.pre_window.strip()!r} must lie "
                                    "before the exposure start, e.g. -14..-1")
            for d in self.exposures:
                windows[d] = [pre] + windows.get(d, [(0, "end")])
        return {"case": self.case, "obs_start": self.obs_start, "obs_end": self.obs_end,
                "event_times": self.event_times, "exposure_start": list(self.exposures),
                "exposure_end": dict(zip(self.exposures, ends)),
                "risk_windows": {d: [list(w) for w in ws] for d, ws in windows.items()},
                "age_cuts": parse_age_cuts(self.age_cuts) or None,
                "first_event_only": bool(self.first_event_only)}

    def options(self) -> dict:
        if self.penalty != "none" and not self.strength > 0 and not self.cv_folds:
            raise DataLoadError(f"the {self.penalty} strength must be > 0, or set CV folds "
                                "to choose it")
        if self.cv_folds and self.penalty == "none":
            raise DataLoadError("CV folds choose the L1 or L2 strength: choose L1 or L2, or "
                                "set CV folds to 0")
        if self.cv_folds == 1:
            raise DataLoadError("CV folds: 0 (no cross-validation) or at least 2")
        if self.bootstrap == 1:
            raise DataLoadError("bootstrap replicates: 0 (none) or at least 2")
        if self.source.get("kind") == "eunomia":  # the study fits itself: no CV, bootstrap
            penalty = self.penalty if self.cdm_other_drugs else "none"
            return {"penalty": penalty, "strength": float(self.strength), "interest": "",
                    "cv_folds": 0, "bootstrap": 0, "seed": int(self.seed)}
        return {"penalty": self.penalty, "strength": float(self.strength),
                "interest": self.interest.strip(), "cv_folds": int(self.cv_folds),
                "bootstrap": int(self.bootstrap), "seed": int(self.seed),
                "probe_days": int(self.probe_days) if self.layout == "cases" else 0}

    def spec(self) -> dict:
        """The analysis as JSON-able data: data source, layout, design and options."""
        layout = "cdm" if self.source.get("kind") == "eunomia" else (
            "eras" if self.source.get("kind") == "simulated" else self.layout)
        return {"survscan_sccs": VERSION, "data": dict(self.source), "layout": layout,
                "design": self.design(), "options": self.options()}

    def job(self, name: str = "SCCS fit") -> SccsJob:
        """A snapshot of the page for a worker thread (the data frame is shared, read-only)."""
        return SccsJob(name=name, spec=self.spec(), frame=self.frame)
