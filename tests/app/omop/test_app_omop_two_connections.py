"""Two OMOP connections open at once (the concept look-up of the OMOP tab while a study runs, or
two users' studies): DuckDB keeps one instance per file in a process, so the second shares the
first's locked-down settings; both work and both stay sandboxed."""

from __future__ import annotations

import threading

import duckdb
import pytest

from app.data.loading import open_omop


def test_a_second_connection_to_the_open_cdm_works_and_stays_locked(tmp_path, monkeypatch):
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(tmp_path))
    first = open_omop("")
    try:
        second = open_omop("")
        try:
            n = first.execute("SELECT count(*) FROM person").fetchone()[0]
            assert n > 0 and second.execute("SELECT count(*) FROM person").fetchone()[0] == n
            for con in (first, second):
                with pytest.raises(duckdb.PermissionException):
                    con.execute("SELECT * FROM read_text('/etc/hostname')")
                with pytest.raises(duckdb.InvalidInputException, match="locked"):
                    con.execute("SET enable_external_access = true")
        finally:
            second.close()
        third = open_omop("")  # the first still open: the instance is still the locked one
        third.close()
    finally:
        first.close()


def test_connections_opened_at_once_from_threads_all_work(tmp_path, monkeypatch):
    """Threads released together each open and query the CDM (without one check-and-set under
    a lock, one thread's SET came after another's lock and was refused)."""
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(tmp_path))
    errors, counts = [], []

    def one(start):
        start.wait()
        try:
            con = open_omop("")
            try:
                counts.append(con.execute("SELECT count(*) FROM person").fetchone()[0])
            finally:
                con.close()
        except Exception as exc:  # collected: the assert below names it
            errors.append(f"{type(exc).__name__}: {exc}")

    for _ in range(10):
        start = threading.Barrier(6)
        threads = [threading.Thread(target=one, args=(start,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and len(counts) == 60 and len(set(counts)) == 1
