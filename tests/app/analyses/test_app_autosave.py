"""A user's analysis autosaved as it changes (a .survscan file) and offered again by a new
session: data, roles and the kept fits, refitted to the same numbers."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

pytest.importorskip("panel")

from app import main  # noqa: E402
from app.analyses import autosave  # noqa: E402


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SURVSCAN_STATE_DIR", str(tmp_path / "sessions"))
    yield tmp_path / "sessions"
    import panel as pn

    pn.state.reset()


def test_a_new_session_reopens_the_last_analysis_with_its_fits():
    first = main.build_app(autosave=True)
    s = first.store
    assert not first.restore.row.visible  # nothing saved yet
    s.load_sample("stanford_heart")
    s.param.update(covariates=["age", "surgery"], penalty="L2", strength=0.5,
                   cut_points={"surgery": [30.0]}, ties="breslow")
    first.workbench.keep(first.workbench.fit_job("kept").run())
    spec = s.spec()

    second = main.build_app(autosave=True)
    offer = second.restore
    assert offer.row.visible and "sample: stanford_heart" in offer.text.object
    assert "1 kept fit(s)" in offer.text.object
    assert second.store.source["name"] == "rossi"  # nothing changes before Reopen
    assert asyncio.run(offer.reopen_now())
    assert second.store.spec() == spec and not offer.row.visible
    assert [f.name for f in second.workbench.fits] == ["kept"]
    pd.testing.assert_frame_equal(second.workbench.fits[0].summary,
                                  first.workbench.fits[0].summary,
                                  check_exact=True)
    assert second.analyses.names == ["analysis 1"]


def test_an_upload_reopens_from_its_saved_copy():
    first = main.build_app(autosave=True)
    first.store.load_upload("mine.csv", b"time,status,x\n5,1,0.5\n6,0,1.5\n7,1,2.5\n")
    saved = autosave.load(None)
    assert saved.spec["roles"]["covariates"] == ["x"]
    second = main.build_app(autosave=True)
    assert asyncio.run(second.restore.reopen_now())
    assert second.store.source["label"] == "file: mine.csv"
    pd.testing.assert_frame_equal(second.store.data, first.store.data)


def test_a_query_the_sandbox_now_refuses_is_a_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(tmp_path))
    first = main.build_app(autosave=True)
    first.store.load_duckdb("", "SELECT * FROM rossi WHERE age > 25")
    monkeypatch.delenv("SURVSCAN_DATA_DIRS")
    record = autosave.load(None)
    record.spec["data"]["path"] = "/etc/cohort.duckdb"  # as if the operator moved the data
    second = main.build_app(autosave=True)
    second.restore.record = record
    assert not asyncio.run(second.restore.reopen_now())
    assert second.store.source["name"] == "rossi" and not second.restore.row.visible


def test_an_unreadable_save_is_ignored(state_dir):
    state_dir.mkdir(parents=True)
    autosave.user_file(None).write_bytes(b"PK not really")
    assert autosave.load(None) is None
    assert not main.build_app(autosave=True).restore.row.visible
    assert autosave.user_file("a/../b c").name.startswith("a_.._b_c-")
    assert autosave.user_file("a/../b c").parent == state_dir
