"""Several named analyses in one browser session: save the current one under a name, switch
between them, delete one.

An analysis is a snapshot of the store's state (data, roles, design, options, form settings,
kept fits with their engine results, the cross-validation and the study), held in memory, so
switching back shows the very same results without a refit. Saving one as a file is
analysis_file.py; reopening a file (a refit) is reopen.py, whose staging store joins here with
``add``.
"""

from __future__ import annotations

import param

from .analysis_file import SETTINGS

STATE = ("data", "raw_data", "data_steps", "simulated", "source", "columns", "time", "start",
         "event", "event_codes", "treatment", "covariates", "strata", "id", "weights", "missing",
         "cut_points", "forms", "interactions", "model", "cause", "ties", "penalty", "strength",
         "strength_as", "strength_fraction", "lambda_max", "lambda_max_key", "unpenalized",
         "backend", "solver",
         *SETTINGS, "fits", "cv", "study", "path")


def snapshot(store) -> dict:
    """The store's state (the values themselves: frames and results are shared, not copied)."""
    return {k: getattr(store, k) for k in STATE}


def put(store, state: dict) -> None:
    """Give ``store`` the snapshot ``state`` in one update; views redraw once (data_version)."""
    with param.parameterized.batch_call_watchers(store):
        store.param.update(**state)
        store.data_version += 1


class NamedAnalyses:
    """The named analyses of one session; ``current`` is the one the store shows."""

    def __init__(self, store, current: str = "analysis 1"):
        self.store, self.current = store, current
        self.saved: dict[str, dict] = {}

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([*self.saved, self.current]))

    def save_as(self, name: str) -> None:
        """Keep the current analysis under ``name`` (which becomes the current name)."""
        name = name.strip()
        if not name:
            raise ValueError("type a name for the analysis")
        self.saved[name] = snapshot(self.store)
        self.current = name

    def switch(self, name: str) -> None:
        """Keep the current analysis under its name, then show ``name``."""
        if name == self.current:
            return
        if name not in self.saved:
            raise ValueError(f"no analysis named {name!r}")
        self.saved[self.current] = snapshot(self.store)
        put(self.store, self.saved[name])
        self.current = name

    def delete(self, name: str) -> None:
        """Forget ``name``; the analysis on screen cannot be deleted (switch away first)."""
        if name == self.current:
            raise ValueError(f"{name!r} is the analysis on screen; switch to another first")
        if self.saved.pop(name, None) is None:
            raise ValueError(f"no analysis named {name!r}")

    def add(self, name: str, staged, keep_current: bool = True) -> str:
        """Show the staging store's analysis as ``name`` (made unique with a number), keeping
        the current one under its name (or, with ``keep_current=False``, replacing it: the
        reopened autosave takes the place of a fresh session's). Returns the name it got."""
        if keep_current:
            self.saved[self.current] = snapshot(self.store)
        else:
            self.saved.pop(self.current, None)
        base = name.strip() or "analysis"
        unique, k = base, 2
        while unique in self.saved:
            unique = f"{base} ({k})"
            k += 1
        put(self.store, snapshot(staged))
        self.current = unique
        self.saved[unique] = snapshot(self.store)
        return unique
