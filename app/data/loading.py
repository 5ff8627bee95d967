"""Loading data: uploaded files, DuckDB queries and OMOP CDM connections.

Everything here turns a user's file, query or path into a DataFrame or a connection, or raises a
DataLoadError whose message is for the user.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
from pathlib import Path


import duckdb
import pandas as pd

import engine

from ..shell import config
from .samples import SAMPLES



class DataLoadError(ValueError):
    """A file, query or setting the app cannot turn into data; the message is for the user."""


def read_upload(filename: str, content: bytes) -> pd.DataFrame:
    """A CSV or Parquet upload as a DataFrame; DataLoadError with a readable message otherwise."""
    if not content:
        raise DataLoadError(f"{filename!r} is empty (0 bytes): choose a file with a header row "
                            "and data")
    limit = config.max_upload_mb()
    if len(content) > limit * 1e6:
        raise DataLoadError(f"{filename!r} is {len(content) / 1e6:.1f} MB, more than this "
                            f"server's upload limit of {limit:g} MB. {big_data_way_out()}")
    suffix = Path(filename or "").suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            df = pd.read_parquet(io.BytesIO(content))
        elif suffix in (".csv", ".txt", ".tsv", ""):
            df = pd.read_csv(io.BytesIO(content), sep=None if suffix == ".tsv" else ",",
                             engine="python" if suffix == ".tsv" else "c")
        else:
            raise DataLoadError(f"{filename!r}: open a .csv or .parquet file")
    except DataLoadError:
        raise
    except Exception as exc:  # pandas/pyarrow parser errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataLoadError(f"could not read {filename!r}: {first}. Check that it is a "
                            "comma-separated file with one header row (or a Parquet file).") from None
    if df.shape[0] == 0 or df.shape[1] < 2:
        raise DataLoadError(f"{filename!r} has {df.shape[0]} rows and {df.shape[1]} columns; "
                            "survival data needs at least a time and an event column")
    return df


def big_data_way_out() -> str:
    """What to do with data too big to upload."""
    dirs = config.data_dirs()
    where = f"{dirs[0]}/cohort.parquet" if dirs else "/data/cohort.parquet"
    return ("For big data, put the file (Parquet is smallest) in the server's data directory "
            f"and query it in the DuckDB tab, e.g. SELECT * FROM read_parquet('{where}').")


def data_path(text: str, what: str) -> Path:
    """``text`` as a path inside one of the operator's data directories (a relative path is
    taken in the first one); DataLoadError otherwise, before anything is opened, so the app
    never tells whether a file outside those directories exists."""
    dirs = config.data_dirs()
    if not dirs:
        raise DataLoadError(f"this server opens no {what} from its disk: the operator has not "
                            "set SURVSCAN_DATA_DIRS. Upload a file, or query the samples "
                            "(leave the path empty).")
    path = Path(text.strip()).expanduser()
    resolved = Path(os.path.realpath(path if path.is_absolute() else dirs[0] / path))
    if not any(resolved.is_relative_to(d) for d in dirs):
        raise DataLoadError(f"{text.strip()!r} is outside the data directories this server "
                            f"allows ({', '.join(str(d) for d in dirs)})")
    if not resolved.exists():
        raise DataLoadError(f"no {what} at {text.strip()!r} in the data directories")
    return resolved


_LOCKING = threading.Lock()  # lock_down's check-then-set, across the session threads


def lock_down(con) -> None:
    """No file, network or extension access for ``con`` beyond the data directories, and its
    configuration locked so SQL cannot undo it (DuckDB's own sandbox settings). A second
    connection to a file already open in this process shares DuckDB's one instance of it,
    locked down by the first: nothing more to set (setting it again would be refused). The
    check and the settings are one step under a lock, so two threads never both set them."""
    with _LOCKING:
        locked, external = con.execute("SELECT current_setting('lock_configuration'), "
                                       "current_setting('enable_external_access')").fetchone()
        if locked and not external:
            return
        con.execute("SET allowed_directories = ?", [[f"{d}/" for d in config.data_dirs()]])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")


def single_select(sql: str) -> None:
    """DataLoadError unless ``sql`` is exactly one SELECT (or WITH ... SELECT) statement, as
    DuckDB's own parser reads it."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise DataLoadError(f"the query is not valid SQL: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise DataLoadError(f"the box runs one SELECT query at a time; this text holds "
                            f"{len(statements)} statements (none was run)")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise DataLoadError(f"only a read-only SELECT (or WITH ... SELECT) query is allowed; "
                            f"this is a {kind.name} statement (not run)")


_QUERIES = threading.Lock()   # one DuckDB query at a time in the process: one memory budget
_SPILL = Path(tempfile.gettempdir()) / f"survscan-duckdb-{os.getpid()}"
DUCKDB_SHARE = 0.5            # of the query budget for DuckDB's buffers (its memory_limit)
RESULT_SHARE = 0.2            # for the fetched result (its Arrow batches, then the DataFrame)


def query_duckdb(path: str, sql: str) -> pd.DataFrame:
    """Run one read-only SELECT ``sql`` on a DuckDB file in the data directories (opened
    read-only), or, with no path, on an in-memory database where the bundled samples are
    tables (rossi, stanford_heart, jasa1, mgus2, bmtcrr).

    The query sees no file outside the data directories, no network and no extension; it is
    stopped after config.query_seconds() and refused above config.query_rows() rows. Memory:
    queries run one at a time; DuckDB (one thread) gets DUCKDB_SHARE of
    config.query_memory_bytes() and spills the rest to a temporary folder (at most
    config.query_temp()); the result is fetched in Arrow batches and refused once they pass
    RESULT_SHARE of it, so the query and its DataFrame stay within the budget (DuckDB's own
    limit does not count the result it hands over: the probe saw 1.9 GB at a 1 GB limit).
    """
    if not sql.strip():
        raise DataLoadError("type a SQL query, e.g. SELECT * FROM rossi WHERE age > 20")
    single_select(sql)
    if not _QUERIES.acquire(timeout=config.query_seconds()):
        raise DataLoadError("the server is running another DuckDB query; try again shortly")
    try:
        return _query(path, sql)
    finally:
        _QUERIES.release()


def _query(path: str, sql: str) -> pd.DataFrame:
    budget = config.query_memory_bytes()
    _SPILL.mkdir(mode=0o700, exist_ok=True)
    settings = {"memory_limit": f"{int(budget * DUCKDB_SHARE)}B", "threads": 1,
                "temp_directory": str(_SPILL), "max_temp_directory_size": config.query_temp(),
                "preserve_insertion_order": False,
                "autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if path.strip():
        con = _connect(str(data_path(path, "DuckDB file")), read_only=True, config=settings)
    else:
        con = duckdb.connect(config=settings)
        for name, sample in SAMPLES.items():
            con.register(name, sample.load())
    seconds, rows = config.query_seconds(), config.query_rows()
    timer = threading.Timer(seconds, con.interrupt)
    try:
        lock_down(con)
        timer.start()
        con.execute(con.sql(sql).limit(rows + 1).sql_query())
        df = _fetch(con, int(budget * RESULT_SHARE))
    except duckdb.PermissionException as exc:
        raise DataLoadError("refused: the query box reads only the tables here and files in "
                            f"the server's data directories ({_first_line(exc)})") from None
    except duckdb.InterruptException:
        raise DataLoadError(f"the query ran longer than {seconds:g} s and was stopped; filter "
                            "or aggregate in SQL (WHERE, GROUP BY, LIMIT)") from None
    except duckdb.OutOfMemoryException:
        raise DataLoadError(f"the query needs more than its {config.query_memory()} of "
                            f"memory and {config.query_temp()} of spill space; filter or "
                            "aggregate in SQL") from None
    except duckdb.Error as exc:
        raise DataLoadError(f"the DuckDB query failed: {_first_line(exc)}") from None
    finally:
        timer.cancel()
        con.close()
    if len(df) > rows:
        raise DataLoadError(f"the query returns more than {rows:,} rows, this server's limit; "
                            "filter or aggregate in SQL (WHERE, GROUP BY, LIMIT)")
    if df.empty:
        raise DataLoadError("the query returned no rows")
    return df


def _fetch(con, most: int) -> pd.DataFrame:
    """The executed query's rows as a DataFrame (DuckDB's ``df()`` types), read in chunks of
    about 100,000 rows; DataLoadError once the chunks pass ``most`` bytes."""
    parts, size = [], 0
    while True:
        part = con.fetch_df_chunk(50)             # 50 vectors of 2,048 rows
        size += int(part.memory_usage(deep=True).sum())
        if size > most:
            raise DataLoadError(f"the query's result is more than {most / 1e6:.0f} MB, this "
                                "server's share of its query memory for results; select fewer "
                                "columns or rows, or aggregate in SQL")
        parts.append(part)
        if part.empty:
            break
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def open_omop(path: str = ""):
    """A read-only, locked-down connection to the OMOP CDM at ``path`` (a DuckDB file or Parquet
    folder in the data directories), or to the bundled Eunomia CDM when ``path`` is empty;
    DataLoadError with the reason otherwise."""
    from engine import cdm

    where = data_path(path, "DuckDB file or Parquet folder") if path.strip() else None
    try:
        con = cdm.open_cdm(where) if where is not None else cdm.open_eunomia()
    except engine.CohortError as exc:
        raise DataLoadError(str(exc)) from None
    except duckdb.Error as exc:  # not a database, locked, ...
        raise DataLoadError(f"could not open the CDM at {path!r}: {_first_line(exc)}") from None
    lock_down(con)
    return con


def _connect(database: str, **kwargs):
    """duckdb.connect, its errors (not a database, locked) as a DataLoadError."""
    try:
        return duckdb.connect(database, **kwargs)
    except duckdb.Error as exc:
        raise DataLoadError(f"could not open the DuckDB file: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def concept_names(con, ids) -> dict:
    """concept_id -> concept_name from the vocabulary's concept table (missing ids left out)."""
    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return {}
    rows = con.execute("SELECT concept_id, concept_name FROM concept WHERE concept_id IN "
                       f"({', '.join(str(i) for i in wanted)})").fetchall()
    return {int(cid): str(name) for cid, name in rows}

