"""The DuckDB query box and the OMOP path as a sandbox (issue 18): one read-only SELECT checked
by DuckDB's parser, no file outside the operator's data directories, no writes, no extensions,
a row limit and a time limit; uploads bounded. Each refusal is a DataLoadError for the user."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from engine import datasets

from app.data.loading import DataLoadError, open_omop, query_duckdb, read_upload
from app.data.store import Store
from app.omop.state import OmopState
from app.survival.state import Workbench


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A data directory the operator allows, holding cohort.duckdb and cohort.parquet."""
    folder = tmp_path / "data"
    folder.mkdir()
    frame = pd.DataFrame({"time": [5.0, 8.0, 3.0], "event": [1, 0, 1], "x": [0.1, 0.2, 0.3]})
    frame.to_parquet(folder / "cohort.parquet")
    con = duckdb.connect(str(folder / "cohort.duckdb"))
    con.register("frame", frame)
    con.execute("CREATE TABLE cohort AS SELECT * FROM frame")
    con.close()
    monkeypatch.setenv("SURVSCAN_DATA_DIRS", str(folder))
    return folder


def test_a_select_on_samples_and_on_files_in_the_data_directory(data_dir):
    rossi = datasets.load_rossi()
    assert len(query_duckdb("", "SELECT * FROM rossi WHERE age > 30")) == (rossi.age > 30).sum()
    assert len(query_duckdb("", "WITH a AS (SELECT * FROM rossi) SELECT * FROM a;")) == 432
    assert list(query_duckdb("cohort.duckdb", "SELECT * FROM cohort")["time"]) == [5, 8, 3]
    assert len(query_duckdb(str(data_dir / "cohort.duckdb"), "FROM cohort")) == 3
    parquet = f"SELECT * FROM read_parquet('{data_dir / 'cohort.parquet'}')"
    assert len(query_duckdb("", parquet)) == 3


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    "SELECT * FROM read_parquet('{data}/../outside.parquet')",
])
def test_files_outside_the_data_directories_are_refused(data_dir, sql):
    with pytest.raises(DataLoadError, match="refused: the query box reads only"):
        query_duckdb("", sql.format(data=data_dir))


@pytest.mark.parametrize("sql, kind", [
    ("COPY (SELECT 1) TO '/tmp/survscan_copy.csv'", "COPY"),
    ("ATTACH '/tmp/survscan_attach.db'", "ATTACH"),
    ("INSTALL httpfs", "LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("DROP TABLE cohort", "DROP"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("PRAGMA version", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("EXPLAIN SELECT 1", "EXPLAIN"),
])
def test_statements_other_than_select_are_refused_unrun(data_dir, sql, kind):
    with pytest.raises(DataLoadError, match=f"only a read-only SELECT.*this is a {kind}"):
        query_duckdb("cohort.duckdb", sql)


def test_several_statements_are_refused_and_none_runs(data_dir):
    with pytest.raises(DataLoadError, match="holds 2 statements"):
        query_duckdb("", "SELECT 1; COPY (SELECT 1) TO '/tmp/survscan_two.csv'")
    with pytest.raises(DataLoadError, match="not valid SQL"):
        query_duckdb("", "SELEC 1")


def test_rows_above_the_limit_are_refused(data_dir):
    with pytest.raises(DataLoadError, match="more than 1,000,000 rows"):
        query_duckdb("", "SELECT * FROM range(100000000)")


def test_a_long_query_is_interrupted(data_dir, monkeypatch):
    monkeypatch.setenv("SURVSCAN_QUERY_SECONDS", "0.5")
    with pytest.raises(DataLoadError, match="longer than 0.5 s and was stopped"):
        query_duckdb("", "SELECT sum(i * i) FROM range(100000000000) t(i)")


def test_paths_outside_the_data_directories_never_tell_whether_a_file_exists(data_dir):
    for path in ("/etc/passwd", "/etc/no_such_file", "../cohort.duckdb", str(data_dir.parent)):
        with pytest.raises(DataLoadError, match="outside the data directories"):
            query_duckdb(path, "SELECT 1")
        with pytest.raises(DataLoadError, match="outside the data directories"):
            open_omop(path)
    with pytest.raises(DataLoadError, match="no DuckDB file at 'missing.duckdb'"):
        query_duckdb("missing.duckdb", "SELECT 1")


def test_without_data_directories_no_path_is_opened(monkeypatch, tmp_path):
    monkeypatch.delenv("SURVSCAN_DATA_DIRS", raising=False)
    with pytest.raises(DataLoadError, match="SURVSCAN_DATA_DIRS"):
        query_duckdb(str(tmp_path), "SELECT 1")
    with pytest.raises(DataLoadError, match="refused"):
        query_duckdb("", f"SELECT * FROM glob('{tmp_path}/*')")
    omop = OmopState(workbench=Workbench(store=Store()))
    omop.path = "/etc"
    with pytest.raises(DataLoadError, match="SURVSCAN_DATA_DIRS"):
        omop.job()


def test_the_omop_connection_is_locked_down(data_dir):
    con = open_omop("")
    try:
        assert con.execute("SELECT count(*) FROM person").fetchone()[0] > 0
        with pytest.raises(duckdb.PermissionException):
            con.execute("SELECT * FROM read_text('/etc/hostname')")
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()


def test_uploads_empty_or_above_the_limit_are_refused(monkeypatch):
    with pytest.raises(DataLoadError, match=r"'empty.csv' is empty \(0 bytes\)"):
        read_upload("empty.csv", b"")
    monkeypatch.setenv("SURVSCAN_MAX_UPLOAD_MB", "0.001")
    with pytest.raises(DataLoadError, match="more than this server's upload limit of 0.001 MB"
                                            ".*read_parquet"):
        read_upload("big.csv", b"time,event\n" + b"1,0\n" * 1000)
