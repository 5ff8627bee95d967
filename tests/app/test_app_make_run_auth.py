"""Issue 30's probe: `make run AUTH=...` on 127.0.0.1 printed "(basic auth on)" but served
with no login. The served page, read without credentials, must be the login page."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)                      # the virtualenv running the tests


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    """(status, final url, body) without credentials; urllib follows the redirects."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.geturl(), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, url, exc.read().decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize("auth", ["s3cret-pw", None], ids=["AUTH", "no AUTH"])
def test_make_run_on_localhost_asks_for_the_login_when_auth_is_given(auth, tmp_path):
    port = _free_port()
    args = ["make", "-s", "-o", f"{VENV}/.stamp-app", "run", f"VENV={VENV}", f"PORT={port}"]
    if auth:
        args.append(f"AUTH={auth}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SURVSCAN_STATE_DIR": str(tmp_path)}
    server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, url, body = _get(f"http://127.0.0.1:{port}/main")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"the server did not answer: {server.stdout.read().decode()}")
                time.sleep(0.5)
        if auth:
            assert "/login" in url and status == 200
            assert "<title>Panel App | Login" in body and 'type="password"' in body
        else:
            assert "/login" not in url and status == 200 and 'type="password"' not in body
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)     # make and the panel server it started
            server.wait(timeout=30)
