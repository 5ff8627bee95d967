"""A FileDropper that refuses a file over the size limit as its first chunk arrives.

Panel's FileDropper sends a file in chunks (``chunk_size`` bytes each, every chunk message
saying which chunk it is of how many) and joins them in memory when the last one arrives; its
``max_file_size`` is checked only by the browser. A client that skips that check could make the
server hold any amount. Here the first chunk's count of chunks bounds the size from below:
over the limit, nothing is kept, the rest of that file's chunks are dropped, and ``refused``
says why (the view shows it as a notification).
"""

from __future__ import annotations

import panel as pn
import param

from .. import config


class BoundedFileDropper(pn.widgets.FileDropper):
    """FileDropper with a server-side size limit (``limit_mb``, default the upload limit)."""

    limit_mb = param.Number(default=None, allow_None=True, doc="Largest file, in MB.")
    refused = param.String(default="", doc="Why the last file was refused (for a message).")

    _rename = {**pn.widgets.FileDropper._rename, "limit_mb": None, "refused": None}  # server-side only

    def __init__(self, **params):
        params.setdefault("limit_mb", config.max_upload_mb())
        params.setdefault("max_file_size", f"{params['limit_mb']:g}MB")  # the browser's check
        super().__init__(**params)
        self._refused_files: set[str] = set()

    def _process_event(self, event) -> None:
        if event.event_name == "upload_event" and self._over_limit(event.data):
            return
        super()._process_event(event)

    def _over_limit(self, data: dict) -> bool:
        """Whether this chunk belongs to a file refused for its size (and drop what is held)."""
        name, limit = data["name"], self.limit_mb * 1e6
        if data["chunk"] == 1:
            self._refused_files.discard(name)
        if name in self._refused_files:
            return True
        at_least = (int(data["total_chunks"]) - 1) * self.chunk_size
        held = sum(len(b) for b in self._file_buffer.get(name, [])) + len(data["data"])
        if max(at_least, held) <= limit:
            return False
        self._file_buffer.pop(name, None)
        self._refused_files.add(name)
        self.refused = (f"{name!r} is more than {max(at_least, held) / 1e6:.0f} MB, over this "
                        f"server's upload limit of {self.limit_mb:g} MB")
        self.param.trigger("refused")
        return True
