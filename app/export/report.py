"""The report folder: every table (CSV) and figure (PNG and SVG) of the analysis in one ZIP, with
the analysis spec and the Python script that reproduces it, ready to go into a paper.

Files come from the views that show them (Describe, Results and its PH check); nothing is
computed here but the archive.
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timezone

README = """survscan report folder ({when})

Data: {data}
Tables are CSV (comma-separated, one header row); figures are PNG ({dpi} dpi) and SVG (text kept
as text, editable). survscan_analysis.py reproduces the fits with the engine API.

Files:
{listing}
"""


def report_zip(files: dict[str, bytes], data_label: str, dpi: int) -> bytes:
    """``files`` (name -> content) and a README listing them, as ZIP bytes (deflated)."""
    if not files:
        raise ValueError("nothing to export yet: load data (and fit) first")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    listing = "\n".join(f"- {name} ({len(content):,} bytes)" for name, content in files.items())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("README.txt", README.format(when=when, data=data_label, dpi=dpi,
                                                     listing=listing))
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()
