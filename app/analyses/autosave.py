"""A user's analysis saved as it changes and offered again after a reload or a server restart.

One .survscan file per owner in config.state_dir() (the analysis file format of
analysis_file.py). The owner is the login under Panel's basic auth; without a login, each
browser: the server gives it a random token in the ``survscan_browser`` cookie (set on the
page's first load, read back from the request on the next), so two anonymous browsers never
share a file. Outside a served page (a notebook, the tests) the one owner is "local".

A file's name is a readable prefix of the owner (characters outside [A-Za-z0-9_.-] as "_",
at most 40) and 16 hex digits of the SHA-256 of the exact owner string: "alice smith" and
"alice_smith", or two names differing only in non-ASCII letters, get different files. Files
saved by earlier versions under the bare prefix ("alice_smith.survscan") are no longer read:
which login wrote one cannot be told, since two logins shared it; they stay on disk for the
operator to remove.

The file holds the data source (an upload as Parquet), the roles, design, options and the kept
fits; reopening refits them (reopen.py), so the restored numbers equal the saved ones.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from pathlib import Path

from ..shell import config
from . import analysis_file
from .analysis_file import Analysis, AnalysisFileError

log = logging.getLogger("survscan.app")


COOKIE = "survscan_browser"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{32,64}$")


def user_file(owner: str | None) -> Path:
    """The owner's file: a readable prefix and a hash of the exact owner string."""
    owner = owner or "local"
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", owner)[:40]
    digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]
    return config.state_dir() / f"{prefix}-{digest}{analysis_file.SUFFIX}"


def owner(user: str | None, cookies: dict, served: bool) -> tuple[str | None, str | None]:
    """(the owner key of a session, a new browser token to set, or None).

    A login is its own key ("user:<login>"); an anonymous served browser is keyed by its
    cookie's token ("browser:<token>"), a fresh one when it has none or a malformed one;
    outside a served page the owner is None ("local")."""
    if user:
        return f"user:{user}", None
    if not served:
        return None, None
    token = cookies.get(COOKIE, "")
    if _TOKEN.match(token):
        return f"browser:{token}", None
    token = secrets.token_urlsafe(32)
    return f"browser:{token}", token


def set_cookie_script(token: str) -> str:
    """JavaScript that stores ``token`` in this browser for a year (the page runs it once its
    document is ready); a later page load sends it back with the request."""
    return (f'document.cookie = "{COOKIE}={token}; path=/; max-age=31536000; '
            'SameSite=Strict" + (location.protocol === "https:" ? "; Secure" : "");')


class Autosaver:
    """Saves one session's analysis for its user whenever the store or the workbench
    changes."""

    def __init__(self, store, workbench, omop, user: str | None, name=lambda: "analysis 1"):
        self.store, self.workbench, self.omop = store, workbench, omop
        self.user, self.name = user, name
        self.parquet = {}   # id(upload frame) -> its Parquet bytes, written once

    def save(self, *events) -> None:
        """Write the analysis file; a failure is logged, never shown: the session goes on
        without its autosave."""
        try:
            self._write()
        except (OSError, ValueError) as exc:
            log.warning("autosave for %s failed: %s", _label(self.user), exc)

    def _write(self) -> None:
        path = user_file(self.user)
        path.parent.mkdir(parents=True, exist_ok=True)
        content = analysis_file.write(
            analysis_file.capture(self.store, self.workbench, self.omop, self.name()),
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
            log.warning("the autosaved analysis of %s is unreadable: %s", _label(user), exc)
        return None


def _label(owner: str | None) -> str:
    """The owner as a log names it: never a browser's token (it is that browser's key)."""
    if owner is None:
        return "local"
    return "an anonymous browser" if owner.startswith("browser:") else owner
