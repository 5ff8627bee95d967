"""A user's analysis saved as it changes and offered again after a reload or a server restart.

One .survscan file per user in config.state_dir() (the analysis file format of
analysis_file.py): the login name under Panel's basic auth, else "local" (a server on localhost
has one user). It holds the data source (an upload as Parquet), the roles, design, options and
the kept fits; reopening refits them (reopen.py), so the restored numbers equal the saved ones.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from . import analysis_file, config
from .analysis_file import Analysis, AnalysisFileError

log = logging.getLogger("survscan.app")


def user_file(user: str | None) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", user or "local")
    return config.state_dir() / f"{name}{analysis_file.SUFFIX}"


class Autosaver:
    """Saves one session's analysis for its user whenever the store changes."""

    def __init__(self, store, user: str | None, name=lambda: "analysis 1"):
        self.store, self.user, self.name = store, user, name
        self.parquet = {}   # id(upload frame) -> its Parquet bytes, written once

    def save(self, *events) -> None:
        """Write the analysis file; a failure is logged, never shown: the session goes on
        without its autosave."""
        try:
            self._write()
        except (OSError, ValueError) as exc:
            log.warning("autosave for %s failed: %s", self.user or "local", exc)

    def _write(self) -> None:
        path = user_file(self.user)
        path.parent.mkdir(parents=True, exist_ok=True)
        content = analysis_file.write(analysis_file.capture(self.store, self.name()),
                                      self.parquet)
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(content)
        temporary.replace(path)


def load(user: str | None) -> Analysis | None:
    """The saved analysis of ``user``, or None (none saved, or unreadable)."""
    try:
        return analysis_file.read(user_file(user).read_bytes(), "the autosaved analysis")
    except (OSError, AnalysisFileError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("the autosaved analysis of %s is unreadable: %s", user or "local", exc)
        return None
