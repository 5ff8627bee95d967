"""A FileDropper whose uploads the server bounds: per file, per session and per server.

Panel's FileDropper sends a file in chunks (``chunk_size`` bytes each, every chunk message
saying which chunk it is of how many) and joins them in memory when the last one arrives; its
``max_file_size`` is checked only by the browser. A client that skips that check could make the
server hold any amount, under one name or spread over many. Here every pending file claims the
larger of what it holds and what its declared chunk count implies, from its first chunk on; a
chunk is refused when its file's claim passes the file limit (``limit_mb``), when the claims of
all this dropper's pending files pass it too (the session's share: one upload at a time), or
when the claims of every dropper in the process pass ``config.max_upload_server_mb()``. A refused
file's chunks are dropped, its buffer freed, and ``refused`` says why (the view shows it). Chunks
a client sends beyond its declared count, or without a first chunk, are dropped.

The browser filters files by type before sending them; it reports a type the operating system
guessed, so each accepted extension also accepts the MIME types browsers report for it (a
Parquet file arrives as application/vnd.apache.parquet, application/x-parquet or
application/octet-stream). What the server opens is decided by the extension alone
(app/data/loading.py).
"""

from __future__ import annotations

import threading
import weakref

import panel as pn
import param

from . import config

MIME_TYPES = {
    ".parquet": ["application/vnd.apache.parquet", "application/x-parquet", "application/parquet",
                 "application/octet-stream"],
    ".pq": ["application/vnd.apache.parquet", "application/x-parquet", "application/parquet",
            "application/octet-stream"],
    ".csv": ["text/csv", "text/plain", "application/csv", "application/vnd.ms-excel"],
    ".txt": ["text/plain"],
}
_LIVE: weakref.WeakSet = weakref.WeakSet()      # every dropper of the process
_LOCK = threading.Lock()                        # claims are checked and taken as one step


def with_mime_types(accepted: list[str]) -> list[str]:
    """``accepted`` with the MIME types browsers report for its extensions."""
    out = list(accepted)
    for entry in accepted:
        out += MIME_TYPES.get(entry.lower(), [])
    return list(dict.fromkeys(out))


def server_claims() -> int:
    """Bytes claimed by the pending uploads of every live dropper in this process."""
    return sum(d.claimed() for d in list(_LIVE))


class BoundedFileDropper(pn.widgets.FileDropper):
    """FileDropper with server-side limits (``limit_mb``, default the upload limit)."""

    limit_mb = param.Number(default=None, allow_None=True, doc="Largest file, in MB.")
    refused = param.String(default="", doc="Why the last file was refused (for a message).")

    _rename = {**pn.widgets.FileDropper._rename, "limit_mb": None, "refused": None}  # server-side only

    def __init__(self, **params):
        params.setdefault("limit_mb", config.max_upload_mb())
        params.setdefault("max_file_size", f"{params['limit_mb']:g}MB")  # the browser's check
        if params.get("accepted_filetypes"):
            params["accepted_filetypes"] = with_mime_types(params["accepted_filetypes"])
        super().__init__(**params)
        self._refused_files: set[str] = set()
        self._declared: dict[str, int] = {}     # pending name -> bytes its chunk count implies
        _LIVE.add(self)

    def claimed(self) -> int:
        """Bytes this dropper's pending files claim: held or declared, whichever is more."""
        return sum(max(self._declared.get(name, 0), sum(len(b) for b in buffers))
                   for name, buffers in list(self._file_buffer.items()))

    def _process_event(self, event) -> None:
        if event.event_name == "upload_event":
            with _LOCK:
                if self._dropped(event.data):
                    return
                super()._process_event(event)
            if event.data["name"] not in self._file_buffer:
                self._declared.pop(event.data["name"], None)
            return
        super()._process_event(event)

    def _dropped(self, data: dict) -> bool:
        """Whether this chunk is dropped: out of sequence, or its file is (now) refused."""
        name = data["name"]
        try:
            k, total = int(data["chunk"]), int(data["total_chunks"])
        except (TypeError, ValueError, KeyError):
            return True
        if k == 1:
            self._refused_files.discard(name)
            self._file_buffer.pop(name, None)
        if name in self._refused_files or k < 1 or k > total \
                or (k > 1 and name not in self._file_buffer):
            return True                       # beyond the declared count, or no first chunk
        held = sum(len(b) for b in self._file_buffer.get(name, [])) + len(data["data"])
        declared = max(total - 1, 0) * self.chunk_size
        claim = max(held, declared)
        before = max(self._declared.get(name, 0),
                     sum(len(b) for b in self._file_buffer.get(name, [])))
        mine = self.claimed() - before + claim
        everyone = server_claims() - before + claim
        server_mb = config.max_upload_server_mb()
        if claim > self.limit_mb * 1e6:
            why = (f"{name!r} is more than {claim / 1e6:.0f} MB, over this server's upload "
                   f"limit of {self.limit_mb:g} MB")
        elif mine > self.limit_mb * 1e6:
            why = (f"{name!r} would bring this page's pending uploads to {mine / 1e6:.0f} MB, "
                   f"over this server's upload limit of {self.limit_mb:g} MB; upload one file "
                   "at a time")
        elif everyone > server_mb * 1e6:
            why = (f"{name!r} would bring the server's pending uploads to {everyone / 1e6:.0f} "
                   f"MB, over its limit of {server_mb:g} MB for all users; try again shortly")
        else:
            self._declared[name] = declared
            return False
        self._file_buffer.pop(name, None)
        self._declared.pop(name, None)
        self._refused_files.add(name)
        self.refused = why
        self.param.trigger("refused")
        return True
