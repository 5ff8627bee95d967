"""Loading data: uploaded files, DuckDB queries and OMOP CDM connections.

Everything here turns a user's file, query or path into a DataFrame or a connection, or raises a
DataLoadError whose message is for the user.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

import engine

from .samples import SAMPLES


class DataLoadError(ValueError):
    """A file, query or setting the app cannot turn into data; the message is for the user."""


def read_upload(filename: str, content: bytes) -> pd.DataFrame:
    """A CSV or Parquet upload as a DataFrame; DataLoadError with a readable message otherwise."""
    if not content:
        raise DataLoadError(f"{filename!r} is empty")
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


def query_duckdb(path: str, sql: str) -> pd.DataFrame:
    """Run ``sql`` on a DuckDB file opened read-only; with no path, on an in-memory database
    where the bundled samples are tables (rossi, stanford_heart, jasa1, mgus2, bmtcrr)."""
    import duckdb

    if not sql.strip():
        raise DataLoadError("type a SQL query, e.g. SELECT * FROM rossi WHERE age > 20")
    try:
        if path.strip():
            if not Path(path).exists():
                raise DataLoadError(f"no DuckDB file at {path!r}")
            con = duckdb.connect(path.strip(), read_only=True)
        else:
            con = duckdb.connect()
            for name, sample in SAMPLES.items():
                con.register(name, sample.load())
        try:
            df = con.execute(sql).df()
        finally:
            con.close()
    except DataLoadError:
        raise
    except Exception as exc:  # duckdb.Error and friends
        first = str(exc).strip().splitlines()[0]
        raise DataLoadError(f"the DuckDB query failed: {first}") from None
    if df.empty:
        raise DataLoadError("the query returned no rows")
    return df



def open_omop(path: str = ""):
    """A read-only connection to the OMOP CDM at ``path`` (DuckDB file or Parquet folder), or to
    the bundled Eunomia CDM when ``path`` is empty; DataLoadError with the reason otherwise."""
    from engine import cdm

    try:
        return cdm.open_cdm(path.strip()) if path.strip() else cdm.open_eunomia()
    except engine.CohortError as exc:
        raise DataLoadError(str(exc)) from None
    except Exception as exc:  # duckdb.Error: not a database, locked, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataLoadError(f"could not open the CDM at {path!r}: {first}") from None


def concept_names(con, ids) -> dict:
    """concept_id -> concept_name from the vocabulary's concept table (missing ids left out)."""
    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return {}
    rows = con.execute("SELECT concept_id, concept_name FROM concept WHERE concept_id IN "
                       f"({', '.join(str(i) for i in wanted)})").fetchall()
    return {int(cid): str(name) for cid, name in rows}

