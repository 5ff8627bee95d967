"""Open an OMOP CDM 5.3 in DuckDB: the bundled Eunomia "GiBleed" database, a DuckDB file, or a
folder of Parquet tables.  Every connection is read-only; the study queries are CTEs, so
nothing is ever written to the CDM."""
from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import duckdb

from ..data.datasets import sample_data_dir
from ..core.errors import CohortError

EUNOMIA_ZIP = "eunomia_gibleed_cdm53_csv.zip"
EUNOMIA_DB = "eunomia_gibleed_cdm53.duckdb"
# The tables a comparative new-user study reads (cohorts, outcome, baseline covariates).
REQUIRED = ("person", "observation_period", "drug_era", "condition_occurrence",
            "procedure_occurrence", "concept", "concept_ancestor")


def cache_dir() -> Path:
    """Where survscan keeps built databases: $SURVSCAN_CACHE, else $XDG_CACHE_HOME/survscan,
    else ~/.cache/survscan."""
    if os.environ.get("SURVSCAN_CACHE"):
        return Path(os.environ["SURVSCAN_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "survscan"


def open_eunomia(path=None) -> duckdb.DuckDBPyConnection:
    """The Eunomia GiBleed CDM (2,694 synthetic persons; OHDSI, Apache-2.0), read-only.

    Built on first use from the bundled CSVs into ``path`` (default: ``cache_dir()/
    eunomia_gibleed_cdm53.duckdb``) with DuckDB's read_csv; later calls open that file.
    observation_period is inner-joined to person (2,649 of its rows name persons that are not
    in the person table).
    """
    path = Path(path) if path is not None else cache_dir() / EUNOMIA_DB
    if not path.exists():
        _build_eunomia(path)
    return open_cdm(path)


def _build_eunomia(path: Path) -> None:
    """Load every CSV of the zip into a new DuckDB file, atomically (write aside, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        with zipfile.ZipFile(sample_data_dir() / EUNOMIA_ZIP) as archive:
            archive.extractall(tmp)
        csvs = {p.stem: p for p in Path(tmp).rglob("*.csv")}
        staging = Path(tmp) / EUNOMIA_DB
        con = duckdb.connect(str(staging))
        try:
            for table in sorted(csvs, key=lambda t: t == "observation_period"):
                source = f"read_csv('{csvs[table].as_posix()}', header = true)"
                where = (" WHERE person_id IN (SELECT person_id FROM person)"
                         if table == "observation_period" else "")
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM {source}{where}")
        finally:
            con.close()
        os.replace(staging, path)


def open_cdm(path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an OMOP CDM 5.3 at ``path``.

    ``path`` is a DuckDB database file (tables named as in the CDM, in its default schema), or
    a folder holding ``<table>.parquet`` files or ``<table>/`` folders of Parquet parts, which
    become views of an in-memory database.
    """
    path = Path(path)
    if path.is_dir():
        con = duckdb.connect()
        for entry in sorted(path.iterdir()):
            table = entry.name.removesuffix(".parquet")
            if entry.suffix == ".parquet" or (entry.is_dir() and any(entry.glob("*.parquet"))):
                pattern = entry.as_posix() + ("/*.parquet" if entry.is_dir() else "")
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{pattern}')")
    elif path.is_file():
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as exc:
            raise CohortError(f"{str(path)!r} is not an OMOP CDM DuckDB file: "
                              f"{str(exc).splitlines()[0]}") from None
    else:
        raise CohortError(f"no OMOP CDM at {str(path)!r}: give a DuckDB file or a folder of "
                          "Parquet tables.")
    check_tables(con)
    return con


def check_tables(con) -> None:
    """Raise CohortError naming the CDM tables a study needs that ``con`` lacks."""
    present = {name.lower() for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables").fetchall()}
    missing = [t for t in REQUIRED if t not in present]
    if missing:
        raise CohortError(f"the CDM lacks table(s) {missing}; a new-user study needs "
                          f"{list(REQUIRED)}.")
