"""The served app that the browser tests share: one `python -m app.serve app/main.py` (`panel
serve`, compressed, as `make run`) on a free port per test process (conftest.py), a fresh
browser context per test; Chromium's flags; and what every page does first (``open_app``) and
last (``assert_no_traceback``).  A server per module cost each of the 15 modules 6-8 s of
start-up on the 2-core CI machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_LOGS: dict[str, Path] = {}  # app URL -> its `panel serve` log
TIMEOUT = 120_000  # ms: the CI machine has 2 cores shared with other jobs
MAX_UPLOAD_MB = 1  # the served app's upload limit in these tests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(log_path: Path, data_dir: Path, state_dir: Path):
    """`python -m app.serve app/main.py` on a free port; yields its URL once it answers HTTP,
    stops it after, and prints the end of its log when a traceback is in it."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "SURVSCAN_DATA_DIRS": str(data_dir), "SURVSCAN_MAX_UPLOAD_MB": str(MAX_UPLOAD_MB),
           "SURVSCAN_JOB_SLOTS": "2",  # as on the 2-core CI box, whatever this box has
           "SURVSCAN_STATE_DIR": str(state_dir)}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.serve", "app/main.py", "--port", str(port),
             "--address", "127.0.0.1", f"--allow-websocket-origin=127.0.0.1:{port}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/main"
    try:
        # the first page (the Data page; other pages build when opened) can still take minutes
        # to come up while parallel test workers load the machine
        deadline = time.monotonic() + 360
        while True:
            if proc.poll() is not None:
                pytest.fail(f"panel serve exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(url, timeout=120) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"panel serve did not answer in 360 s:\n{log_path.read_text()}")
            time.sleep(0.5)
        SERVER_LOGS[url] = log_path
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if "Traceback" in log_path.read_text(errors="replace"):
            print(log_path.read_text(errors="replace")[-5000:])


def print_server_log(url: str, chars: int = 8000) -> None:
    """The last ``chars`` of the log of the server at ``url``."""
    log = SERVER_LOGS.get(url)
    if log is not None and log.exists():
        print(f"--- the end of {log}:\n{log.read_text(errors='replace')[-chars:]}")


def open_app(pg, url):
    from playwright.sync_api import expect

    pg.goto(url, timeout=TIMEOUT)
    # rendered widgets mean the websocket is up and the session's document arrived
    expect(pg.get_by_role("button", name="Open sample")).to_be_visible(timeout=TIMEOUT)
    expect(pg.get_by_text("Ready to fit.")).to_be_visible(timeout=TIMEOUT)
    assert pg.title() == "survscan"


def assert_no_traceback(pg):
    assert pg.get_by_text("Traceback").count() == 0
    assert "Traceback" not in pg.content()
