"""The served app's warm-up (app/shell/warm_up.py): ``python -m app.serve`` starts it before
the server, and it runs the first steps of an analysis to the end in a background thread, so
the engine's kernels are compiled (or loaded from Numba's cache) before a user's first fit,
then those of the other pages (Fine-Gray, SCCS, the sampler, GWAS)."""

from __future__ import annotations

import logging

import pytest

from app import serve
from app.shell import warm_up


def test_serve_starts_the_warm_up_before_the_server(monkeypatch):
    order = []
    monkeypatch.setattr(serve, "warm_up", lambda: order.append("warm-up"))
    monkeypatch.setattr(serve.CompressedServe, "invoke",
                        lambda self, args: order.append(f"serve {args.port}") or True)
    assert serve.main(["app/main.py", "--port", "5123"]) == 0
    assert order == ["warm-up", "serve 5123"]


@pytest.mark.slow       # a fresh clone compiles the kernels here (about 38 s), else 5 s
def test_the_warm_up_runs_the_first_steps_in_the_background(caplog):
    caplog.set_level(logging.INFO, logger="survscan.app")
    thread = warm_up.warm_up()
    assert thread.daemon and thread.name == "survscan-warm-up"
    thread.join(timeout=300)
    assert not thread.is_alive()
    said = [r.getMessage() for r in caplog.records]
    assert any("the engine's kernels ready in" in m for m in said), caplog.text
    assert any("the other pages' kernels ready in" in m for m in said), caplog.text


def test_a_failing_warm_up_is_logged_not_raised(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="survscan.app")

    def broken():
        raise RuntimeError("no rossi here")

    monkeypatch.setattr(warm_up, "first_steps", broken)
    warm_up.warm_up().join(timeout=30)
    assert any("warm-up failed" in r.getMessage() and r.exc_info for r in caplog.records)
