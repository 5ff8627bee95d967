"""Issue 30's isolation probe: logins "alice smith" and "alice_smith" shared one autosave file
(one user was offered the other's analysis). Files are keyed by a readable prefix and a hash of
the exact owner; anonymous served browsers are owned by a random cookie token."""
from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("panel")

from app.analyses import autosave  # noqa: E402
from app.data.store import Store  # noqa: E402
from app.omop.state import OmopState  # noqa: E402
from app.survival.state import Workbench  # noqa: E402


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SURVSCAN_STATE_DIR", str(tmp_path / "sessions"))
    return tmp_path / "sessions"


COLLIDING = [("alice smith", "alice_smith"), ("Zoë", "Zoé"), ("日本", "中文"),
             ("a/b", "a\\b"), ("x" * 45 + "1", "x" * 45 + "2"), ("user", "USER")]


@pytest.mark.parametrize("a, b", COLLIDING, ids=[f"{a!r}-{b!r}" for a, b in COLLIDING])
def test_names_that_sanitize_alike_get_different_files(a, b):
    fa, fb = autosave.user_file(f"user:{a}"), autosave.user_file(f"user:{b}")
    assert fa != fb and fa.parent == fb.parent
    for login, path in ((a, fa), (b, fb)):
        digest = hashlib.sha256(f"user:{login}".encode()).hexdigest()[:16]
        assert path.name.endswith(f"-{digest}.survscan")      # the definition
        assert set(path.stem[:-17]) <= set("abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
        assert len(path.name) <= 40 + 1 + 16 + len(".survscan")


def test_alice_smith_and_alice_underscore_smith_each_reopen_their_own():
    for login, sample in (("alice smith", "rossi"), ("alice_smith", "stanford_heart")):
        store = Store()
        store.load_sample(sample)
        bench = Workbench(store=store)
        autosave.Autosaver(store, bench, OmopState(workbench=bench), f"user:{login}").save()
    assert autosave.load("user:alice smith").spec["data"]["name"] == "rossi"
    assert autosave.load("user:alice_smith").spec["data"]["name"] == "stanford_heart"
    assert autosave.load("user:alice") is None


def test_a_file_of_the_old_naming_is_not_read(state_dir):
    store = Store()
    store.load_sample("rossi")
    bench = Workbench(store=store)
    autosave.Autosaver(store, bench, OmopState(workbench=bench), "user:alice smith").save()
    new = autosave.user_file("user:alice smith")
    old = state_dir / "alice_smith.survscan"
    new.rename(old)                       # as the earlier version wrote it (shared by two)
    assert autosave.load("user:alice_smith") is None
    assert autosave.load("user:alice smith") is None


def test_owner_of_a_login_an_anonymous_browser_and_a_notebook():
    assert autosave.owner("bob", {}, served=True) == ("user:bob", None)
    assert autosave.owner(None, {}, served=False) == (None, None)
    key, token = autosave.owner(None, {}, served=True)
    assert token is not None and key == f"browser:{token}" and len(token) >= 32
    again, none = autosave.owner(None, {autosave.COOKIE: token}, served=True)
    assert (again, none) == (key, None)
    other, token2 = autosave.owner(None, {}, served=True)
    assert token2 != token and autosave.user_file(other) != autosave.user_file(key)


@pytest.mark.parametrize("cookie", ["", "short", "../../etc/passwd" + "a" * 30, "a b" * 20])
def test_a_malformed_cookie_gets_a_fresh_token(cookie):
    key, token = autosave.owner(None, {autosave.COOKIE: cookie}, served=True)
    assert token is not None and key == f"browser:{token}"


def test_the_cookie_script_sets_the_token_for_a_year():
    script = autosave.set_cookie_script("T" * 43)
    assert f'{autosave.COOKIE}={"T" * 43}; path=/; max-age=31536000; SameSite=Strict' in script
