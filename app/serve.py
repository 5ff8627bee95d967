"""`panel serve` with gzip-compressed HTTP responses: ``python -m app.serve app/main.py [flags]``.

The first page is about 4.3 MB of JavaScript and CSS (Bokeh, Panel, Tabulator, FilePond,
Bootstrap) that Bokeh's server sends uncompressed. Tornado compresses responses when its
application is made with ``compress_response=True``; Panel's serve command lets a subclass add
server settings (``customize_kwargs``), and the Bokeh server hands settings it does not know to
the Tornado application. Every flag of ``panel serve`` works as there. A reverse proxy that
compresses (docs/deploy.md) makes this redundant but does no harm.

The app's own log (``survscan.app``: every message a user was shown, and why a job failed)
follows ``--log-level`` as Bokeh's does (``panel serve`` leaves it at warnings only).
"""

from __future__ import annotations

import argparse
import logging
import sys

from bokeh.settings import settings
from panel.command.serve import Serve


class CompressedServe(Serve):
    """Panel's serve command; its server gzips what a browser accepts gzipped, and the app
    logs at ``--log-level``."""

    def invoke(self, args):
        level = settings.py_log_level(args.log_level) or logging.INFO
        logging.getLogger("survscan").setLevel(level)
        return super().invoke(args)

    def customize_kwargs(self, args, server_kwargs):
        kwargs = super().customize_kwargs(args, server_kwargs)
        kwargs["compress_response"] = True
        return kwargs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.serve",
                                     description="panel serve, with compressed responses")
    command = CompressedServe(parser=parser)
    ok = command.invoke(parser.parse_args(argv))
    return 0 if ok in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
