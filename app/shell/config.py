"""The operator's settings for a served app, read from the environment once per call.

SURVSCAN_DATA_DIRS      folders (separated by ':') whose files the DuckDB box and the OMOP
                        tab may open; nothing else on the server can be read (default: none)
SURVSCAN_QUERY_ROWS     most rows a DuckDB query may return (default 1,000,000)
SURVSCAN_QUERY_SECONDS  a DuckDB query running longer is interrupted (default 30)
SURVSCAN_QUERY_MEMORY   the memory a DuckDB query may take, its result included (default 1GB);
                        queries run one at a time, so it bounds them all together
SURVSCAN_QUERY_TEMP     most disk a query may spill to (default 4GB)
SURVSCAN_MAX_UPLOAD_MB  largest file a browser may upload (default 50); also the most one
                        page's pending uploads may hold together
SURVSCAN_MAX_UPLOAD_SERVER_MB  most all pending uploads of the server may hold together
                        (default 4 x SURVSCAN_MAX_UPLOAD_MB)
SURVSCAN_JOB_SLOTS      fits and cross-validations run at once over all sessions (default:
                        the number of CPU cores); the others wait in a visible queue
SURVSCAN_SESSION_MEMORY_MB  most memory one session's fit, upload or simulation may need
                        (default 4000); less when the server has less free
SURVSCAN_STATE_DIR      where each user's last analysis is autosaved (default:
                        $XDG_CACHE_HOME/survscan/sessions, else ~/.cache/survscan/sessions)
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def data_dirs() -> list[Path]:
    """The configured data directories, resolved (symbolic links followed)."""
    text = os.environ.get("SURVSCAN_DATA_DIRS", "")
    return [Path(os.path.realpath(Path(p).expanduser())) for p in text.split(os.pathsep)
            if p.strip()]


def _number(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    try:
        return float(value) if value.strip() else default
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number") from None


def query_rows() -> int:
    return int(_number("SURVSCAN_QUERY_ROWS", 1_000_000))


def query_seconds() -> float:
    return _number("SURVSCAN_QUERY_SECONDS", 30.0)


def query_memory() -> str:
    return os.environ.get("SURVSCAN_QUERY_MEMORY", "1GB")


def query_memory_bytes() -> int:
    """SURVSCAN_QUERY_MEMORY in bytes ("1GB", "512MB", "2GiB", a bare number of bytes)."""
    text = query_memory().strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"SURVSCAN_QUERY_MEMORY={text!r} is not a size like 1GB or 512MB")
    unit = (match.group(2) or "B").upper()
    power = "BKMGT".index(unit[0])
    return int(float(match.group(1)) * (1024 if "I" in unit else 1000) ** power)


def query_temp() -> str:
    return os.environ.get("SURVSCAN_QUERY_TEMP", "4GB")


def max_upload_mb() -> float:
    return _number("SURVSCAN_MAX_UPLOAD_MB", 50.0)


def max_upload_server_mb() -> float:
    return _number("SURVSCAN_MAX_UPLOAD_SERVER_MB", 4 * max_upload_mb())


def session_memory_mb() -> float:
    return _number("SURVSCAN_SESSION_MEMORY_MB", 4000.0)


def job_slots() -> int:
    return int(_number("SURVSCAN_JOB_SLOTS", float(os.cpu_count() or 1)))


def state_dir() -> Path:
    if os.environ.get("SURVSCAN_STATE_DIR", "").strip():
        return Path(os.environ["SURVSCAN_STATE_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "survscan" / "sessions"
