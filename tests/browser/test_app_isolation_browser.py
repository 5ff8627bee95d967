"""Issue 30: without a login, every browser used to share one autosave file ("local"), so a
stranger was offered, and could reopen, another browser's analysis. In headless Chromium:
each browser gets its own ``survscan_browser`` cookie from the server and its own file; a reload
in the same browser still offers its own last analysis (fixtures of test_app_browser)."""

from __future__ import annotations

import re

import pytest
from test_app_browser import (
    TIMEOUT, assert_no_traceback, open_app, open_sample,
)

pytestmark = pytest.mark.browser


def test_two_anonymous_browsers_never_see_each_others_autosave(browser, app_url):
    from playwright.sync_api import expect

    contexts = [browser.new_context(viewport={"width": 1400, "height": 1200}) for _ in range(2)]
    try:
        a, b = (c.new_page() for c in contexts)
        a.set_default_timeout(TIMEOUT)
        b.set_default_timeout(TIMEOUT)
        open_app(a, app_url)
        open_sample(a, "mgus2")                                   # autosaved for A
        tokens = [c["value"] for c in contexts[0].cookies() if c["name"] == "survscan_browser"]
        assert len(tokens) == 1 and re.fullmatch(r"[A-Za-z0-9_-]{43}", tokens[0])
        open_app(b, app_url)                                      # B: a stranger
        expect(b.get_by_text("sample: rossi —")).to_be_visible()
        expect(b.locator(".restore-offer").get_by_text("Your last analysis")).to_have_count(0)
        b.reload()
        open_app(b, app_url)
        expect(b.locator(".restore-offer").get_by_text("Your last analysis")).to_have_count(0)
        b_tokens = [c["value"] for c in contexts[1].cookies() if c["name"] == "survscan_browser"]
        assert b_tokens and b_tokens != tokens
        a.reload()                                                # A: its own, again
        open_app(a, app_url)
        expect(a.locator(".restore-offer").get_by_text(
            re.compile(r"Your last analysis: sample: mgus2"))).to_be_visible()
        for pg in (a, b):
            assert_no_traceback(pg)
    finally:
        for c in contexts:
            c.close()
