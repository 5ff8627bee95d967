"""`panel serve` with gzip-compressed HTTP responses: ``python -m app.serve app/main.py [flags]``.

The first page is about 4.3 MB of JavaScript and CSS (Bokeh, Panel, Tabulator, FilePond,
Bootstrap) that Bokeh's server sends uncompressed. Tornado compresses responses when its
application is made with ``compress_response=True``; Panel's serve command lets a subclass add
server settings (``customize_kwargs``), and the Bokeh server hands settings it does not know to
the Tornado application. Every flag of ``panel serve`` works as there. A reverse proxy that
compresses (docs/deploy.md) makes this redundant but does no harm.

The static files (the 4.3 MB) are compressed once per server and kept, not once per request:
gzip of every new visitor's scripts was 15% of the server's CPU for a page (py-spy, eight page
opens), taken from the sessions that six users arriving together wait for.

The app's own log (``survscan.app``: every message a user was shown, and why a job failed)
follows ``--log-level`` as Bokeh's does (``panel serve`` leaves it at warnings only).

As it starts, the server compiles the engine's kernels in a background thread
(app/shell/warm_up.py), before the first user's first fit needs them.
"""

from __future__ import annotations

import argparse
import logging
import sys

from bokeh.settings import settings
from panel.command.serve import Serve
from tornado.web import GZipContentEncoding

from .shell.warm_up import warm_up


class KeptStaticGzip(GZipContentEncoding):
    """Tornado's gzip transform; a static file's compressed bytes are kept by path and sent
    again as they are to the next browser that asks for it.  The path, not the URL: a file does
    not change while the server runs, and made-up query strings (``?v=...``) from a visitor
    must not grow what is kept."""

    kept: dict[str, bytes] = {}

    def __init__(self, request):
        super().__init__(request)
        static = (request.method == "GET" and request.path.startswith("/static/")
                  and "Range" not in request.headers)
        self._key = request.path if static else None
        self._replay = False
        self._parts: list[bytes] = []

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        kept = self.kept.get(self._key) if self._gzipping and status_code == 200 else None
        if kept is None:
            if status_code != 200:
                self._key = None
            # compresses the chunk through transform_chunk, which keeps it
            return super().transform_first_chunk(status_code, headers, chunk, finishing)
        self._replay = True
        headers["Vary"] = ", ".join(filter(None, [headers.get("Vary"), "Accept-Encoding"]))
        headers["Content-Encoding"] = "gzip"
        headers["Content-Length"] = str(len(kept))
        return status_code, headers, kept

    def transform_chunk(self, chunk, finishing):
        if self._replay:  # the kept bytes went with the first chunk
            return b""
        chunk = super().transform_chunk(chunk, finishing)
        if self._key is not None and self._gzipping:
            self._parts.append(chunk)
            if finishing:
                self.kept[self._key] = b"".join(self._parts)
        return chunk


class CompressedServe(Serve):
    """Panel's serve command; its server gzips what a browser accepts gzipped (static files
    once), and the app logs at ``--log-level``."""

    def invoke(self, args):
        level = settings.py_log_level(args.log_level) or logging.INFO
        logging.getLogger("survscan").setLevel(level)
        return super().invoke(args)

    def customize_kwargs(self, args, server_kwargs):
        kwargs = super().customize_kwargs(args, server_kwargs)
        kwargs["transforms"] = [KeptStaticGzip]
        return kwargs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.serve",
                                     description="panel serve, with compressed responses")
    command = CompressedServe(parser=parser)
    args = parser.parse_args(argv)
    warm_up()
    ok = command.invoke(args)
    return 0 if ok in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
