"""The served app in headless Chromium: title, data rows, a Cox fit, and no traceback."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
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
ROSSI_FIN_EFRON = -0.3794222  # R coxph, Efron ties (sample_data/README.md)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium; missing is a skip on a workstation and a failure in CI."""
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium, or run `make test`)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    pytest.importorskip("playwright.sync_api")
    return CHROMIUM


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """`panel serve app/main.py` on a free port; yields its URL once it answers HTTP."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("panel") / "serve.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "panel", "serve", "app/main.py", "--port", str(port),
             "--address", "127.0.0.1", f"--allow-websocket-origin=127.0.0.1:{port}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/main"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"panel serve exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"panel serve did not answer in 120 s:\n{log_path.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_page_fits_cox_on_rossi(chromium, app_url):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(app_url, timeout=120_000)
            assert page.title() == "survscan"

            preview = page.locator(".tabulator").first
            expect(preview.locator(".tabulator-row").first).to_be_visible(timeout=60_000)
            assert preview.locator(".tabulator-row").count() >= 10

            page.get_by_role("button", name="Fit Cox (Efron)").click()
            fin_row = page.locator(
                ".tabulator-row",
                has=page.locator(".tabulator-cell", has_text=re.compile(r"^\s*fin\s*$")),
            )
            failed = page.get_by_text("Fit failed")
            expect(fin_row.or_(failed).first).to_be_visible(timeout=180_000)
            assert failed.count() == 0, failed.first.inner_text()
            expect(fin_row).to_have_count(1)
            coef = fin_row.locator('.tabulator-cell[tabulator-field="coef"]').inner_text()
            assert float(coef) == pytest.approx(ROSSI_FIN_EFRON, abs=1e-5)

            assert page.get_by_text("Traceback").count() == 0
        finally:
            browser.close()
