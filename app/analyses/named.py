"""Several named analyses in one browser session: save the current one under a name, switch
between them, delete one.

An analysis is a snapshot of the store's state (data, roles, design, options, form settings),
of the survival workbench's (kept fits with their engine results, the cross-validation, the
path) and of the OMOP page's (its settings and study), held in memory, so switching back shows
the very same results without a refit. Saving one as a file is analysis_file.py; reopening a
file (a refit) is reopen.py, whose staging store, workbench and OMOP state join here with
``add``.
"""

from __future__ import annotations

import param

from ..omop.state import SETTINGS as OMOP_SETTINGS
from .analysis_file import WORKBENCH_SETTINGS

STATE = ("data", "raw_data", "data_steps", "simulated", "source", "columns", "time", "start",
         "event", "event_codes", "treatment", "covariates", "strata", "id", "weights", "missing",
         "cut_points", "forms", "interactions", "model", "cause", "ties", "penalty", "strength",
         "strength_as", "strength_fraction", "lambda_max", "lambda_max_key", "unpenalized",
         "backend", "solver")
WORKBENCH_STATE = ("fits", "cv", "path", *WORKBENCH_SETTINGS)
OMOP_STATE = (*OMOP_SETTINGS, "study")


def snapshot(store, workbench, omop) -> dict:
    """The store's, the workbench's and the OMOP page's state (the values themselves: frames
    and results are shared, not copied)."""
    return {**{k: getattr(store, k) for k in STATE},
            "workbench": {k: getattr(workbench, k) for k in WORKBENCH_STATE},
            "omop": {k: getattr(omop, k) for k in OMOP_STATE}}


def put(store, workbench, omop, state: dict) -> None:
    """Give ``store``, ``workbench`` and ``omop`` the snapshot ``state`` in one update each;
    views redraw once (data_version), after the store and the workbench both hold it."""
    omop.param.update(**state["omop"])
    with param.parameterized.batch_call_watchers(store):
        with param.parameterized.batch_call_watchers(workbench):
            workbench.param.update(**state["workbench"])
            store.param.update(**{k: v for k, v in state.items()
                                  if k not in ("omop", "workbench")})
            store.data_version += 1


class NamedAnalyses:
    """The named analyses of one session; ``current`` is the one the store shows."""

    def __init__(self, store, workbench, omop, current: str = "analysis 1"):
        self.store, self.workbench, self.omop, self.current = store, workbench, omop, current
        self.saved: dict[str, dict] = {}

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([*self.saved, self.current]))

    def save_as(self, name: str) -> None:
        """Keep the current analysis under ``name`` (which becomes the current name)."""
        name = name.strip()
        if not name:
            raise ValueError("type a name for the analysis")
        self.saved[name] = snapshot(self.store, self.workbench, self.omop)
        self.current = name

    def switch(self, name: str) -> None:
        """Keep the current analysis under its name, then show ``name``."""
        if name == self.current:
            return
        if name not in self.saved:
            raise ValueError(f"no analysis named {name!r}")
        self.saved[self.current] = snapshot(self.store, self.workbench, self.omop)
        put(self.store, self.workbench, self.omop, self.saved[name])
        self.current = name

    def delete(self, name: str) -> None:
        """Forget ``name``; the analysis on screen cannot be deleted (switch away first)."""
        if name == self.current:
            raise ValueError(f"{name!r} is the analysis on screen; switch to another first")
        if self.saved.pop(name, None) is None:
            raise ValueError(f"no analysis named {name!r}")

    def add(self, name: str, staged, staged_workbench, staged_omop,
            keep_current: bool = True) -> str:
        """Show the staged store's, workbench's and OMOP state's analysis as ``name`` (made
        unique with a number), keeping the current one under its name (or, with
        ``keep_current=False``, replacing it: the reopened autosave takes the place of a fresh
        session's). Returns the name it got."""
        if keep_current:
            self.saved[self.current] = snapshot(self.store, self.workbench, self.omop)
        else:
            self.saved.pop(self.current, None)
        base = name.strip() or "analysis"
        unique, k = base, 2
        while unique in self.saved:
            unique = f"{base} ({k})"
            k += 1
        put(self.store, self.workbench, self.omop,
            snapshot(staged, staged_workbench, staged_omop))
        self.current = unique
        self.saved[unique] = snapshot(self.store, self.workbench, self.omop)
        return unique
