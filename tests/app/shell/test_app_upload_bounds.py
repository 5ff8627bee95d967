"""Issue 30's upload probe: partial uploads under ten names held 413 MB with no refusal (the
limit was per name), a client sending more chunks than it declared made KeyError tracebacks,
and a Parquet file the browser reported as application/vnd.apache.parquet was refused."""
from __future__ import annotations

import gc
import io
from types import SimpleNamespace

import pandas as pd
import pytest

pytest.importorskip("panel")

from app.data.loading import read_upload  # noqa: E402
from app.shell import bounded_dropper  # noqa: E402
from app.shell.bounded_dropper import BoundedFileDropper  # noqa: E402

CHUNK = 100_000


def chunk(name, k, total, data, kind="application/octet-stream"):
    return SimpleNamespace(event_name="upload_event",
                           data={"name": name, "chunk": k, "total_chunks": total,
                                 "data": data, "type": kind})


def held(dropper):
    return sum(len(b) for buffers in dropper._file_buffer.values() for b in buffers)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("SURVSCAN_MAX_UPLOAD_SERVER_MB", raising=False)
    gc.collect()                       # droppers of earlier tests leave the server's ledger


def test_chunks_beyond_the_declared_count_are_dropped_without_error():
    d = BoundedFileDropper(limit_mb=1, chunk_size=CHUNK)
    d._process_event(chunk("a.csv", 1, 2, b"x" * CHUNK))
    d._process_event(chunk("a.csv", 2, 2, b"y" * 10))
    for k in (3, 4, 12):                                   # the probe's extra chunks
        d._process_event(chunk("a.csv", k, 2, b"z" * CHUNK))
    assert d.value == {"a.csv": b"x" * CHUNK + b"y" * 10} and d._file_buffer == {}


@pytest.mark.parametrize("k, total", [(2, 3), (0, 3), (-1, 3), ("x", 3), (1, "many")])
def test_out_of_sequence_chunks_are_dropped(k, total):
    d = BoundedFileDropper(limit_mb=1, chunk_size=CHUNK)
    d._process_event(chunk("b.csv", k, total, b"x" * 10))
    assert d._file_buffer == {} and d.value == {}


def test_pending_names_of_one_page_share_its_limit_and_are_refused_at_the_first_chunk():
    """Ten names, each sending the first of 4 chunks: the claims (3 chunks each, declared)
    pass the 1 MB limit at the fourth name, which is refused; held bytes stay under 1 MB."""
    d = BoundedFileDropper(limit_mb=1, chunk_size=CHUNK)
    for i in range(10):
        d._process_event(chunk(f"part{i}.csv", 1, 4, b"x" * CHUNK))
        assert d.claimed() <= 1e6 and held(d) <= 1e6
    assert sorted(d._file_buffer) == [f"part{i}.csv" for i in range(3)]
    assert ("'part9.csv' would bring this page's pending uploads to 1 MB, over this "
            "server's upload limit of 1 MB; upload one file at a time") == d.refused


def test_pending_uploads_of_all_pages_share_the_server_limit(monkeypatch):
    before = bounded_dropper.server_claims()       # pages of other tests still alive
    monkeypatch.setenv("SURVSCAN_MAX_UPLOAD_SERVER_MB", str((before + 500_000) / 1e6))
    pages = [BoundedFileDropper(limit_mb=1, chunk_size=CHUNK) for _ in range(4)]
    for i, d in enumerate(pages):
        d._process_event(chunk(f"s{i}.csv", 1, 3, b"x" * CHUNK))    # claims 200 kB each
    assert bounded_dropper.server_claims() - before == 400_000
    assert [bool(d._file_buffer) for d in pages] == [True, True, False, False]
    assert "server's pending uploads" in pages[2].refused and "for all users" in \
        pages[2].refused
    pages[0]._process_event(chunk("s0.csv", 2, 3, b"x" * CHUNK))
    pages[0]._process_event(chunk("s0.csv", 3, 3, b"x" * 10))      # done: its claim leaves
    assert bounded_dropper.server_claims() - before == 200_000
    pages[2]._process_event(chunk("s2.csv", 1, 3, b"x" * CHUNK))   # now it fits
    assert pages[2]._file_buffer


def test_a_restart_of_a_name_replaces_its_claim():
    d = BoundedFileDropper(limit_mb=1, chunk_size=CHUNK)
    for _ in range(20):
        d._process_event(chunk("again.csv", 1, 5, b"x" * CHUNK))
    assert d.claimed() == 4 * CHUNK and held(d) == CHUNK


@pytest.mark.parametrize("kind", ["application/vnd.apache.parquet", "application/x-parquet",
                                  "application/octet-stream", ""])
def test_parquet_is_accepted_by_extension_whatever_the_mime_type(kind):
    d = BoundedFileDropper(limit_mb=1, chunk_size=CHUNK,
                           accepted_filetypes=[".csv", ".parquet", ".pq"])
    if kind:
        assert kind in d.accepted_filetypes                        # the browser's filter
    frame = pd.DataFrame({"time": [5.0, 6.0, 7.0], "status": [1, 0, 1], "x": [0.5, 1.5, 2.5]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    d._process_event(chunk("cohort.parquet", 1, 1, buffer.getvalue(), kind))
    pd.testing.assert_frame_equal(read_upload("cohort.parquet", d.value["cohort.parquet"]),
                                  frame)


def test_csv_types_browsers_report_are_accepted():
    accepted = bounded_dropper.with_mime_types([".csv"])
    assert {"text/csv", "application/vnd.ms-excel"} <= set(accepted)
