"""The browser tests' fixtures: Chromium, the served app and a fresh page per test (see
served_app.py).  The server lives for the whole test process (each test opens its own browser
context, so it still starts a session of its own); Playwright and Chromium for one module at a
time: while Playwright's sync API is active its event loop runs in the process, and the app
tests' ``asyncio.run`` that a worker may run between browser modules would fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from served_app import (CHROMIUM, CHROMIUM_ARGS, TIMEOUT, assert_no_traceback, open_app,
                        print_server_log, served)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium; missing is a skip on a workstation and a failure in CI."""
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium, or run `make test`)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    pytest.importorskip("playwright.sync_api")
    return CHROMIUM


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The served app's URL (served_app.served), with its own data and state folders."""
    with served(tmp_path_factory.mktemp("panel") / "serve.log",
                tmp_path_factory.mktemp("data"),            # the operator's data directory
                tmp_path_factory.mktemp("sessions")) as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT)  # assertions wait as long as actions on a busy CI box

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, app_url, request):
    """A fresh browser session (its own context: cookies, websocket, server-side store).  When
    the test fails, the browser's console errors and the end of the server's log are printed
    with it (what each side did)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    context.set_default_timeout(TIMEOUT)
    pg = context.new_page()
    console: list[str] = []
    pg.on("console", lambda m: console.append(f"{m.type}: {m.text}")
          if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda e: console.append(f"page error: {e}"))
    open_app(pg, app_url)
    try:
        yield pg
        assert_no_traceback(pg)
    finally:
        context.close()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print("--- the browser's console errors and warnings:", *console[-40:], sep="\n")
            print_server_log(app_url)
