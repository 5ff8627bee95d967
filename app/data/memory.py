"""Refusing work that would exhaust the server, with the numbers, before it starts.

A fit or cross-validation is estimated by engine.fit_memory; an upload by its size times how
much bigger parsing makes it; a simulated cohort by its non-zeros. The work may use what the
server has free now (engine.available_memory: MemAvailable of /proc/meminfo), at most the
per-session budget (config.session_memory_mb). A refusal is a DataLoadError the views show
as a notification.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import engine

from ..shell import config
from .loading import DataLoadError
from .model_terms import form_columns

# Peak memory of parsing, per byte of the file: pandas' CSV reader holds the text, its
# tokens and the columns (about 3x for numeric CSV here; 4 leaves a margin); a Parquet file is
# compressed, its columns unpack to several times its size.
PARSE_FACTOR = {"csv": 4.0, "parquet": 10.0}
# A simulated cohort: a CSC value and row per non-zero with the simulation's temporaries, and
# time, event and strata per row.
SIMULATION_BYTES = {"nonzero": 40, "row": 64}


def allowed_bytes() -> int:
    """What one session's work may use: the free memory, at most the session budget."""
    return int(min(engine.available_memory(), config.session_memory_mb() * 1e6))


def check(needed: float, what: str, way_out: str) -> None:
    """DataLoadError with the numbers when ``needed`` bytes exceed what a session may use."""
    allowed = allowed_bytes()
    if needed > allowed:
        raise DataLoadError(f"{what} needs about {_size(needed)}; the server has "
                            f"{_size(allowed)} free for this session; {way_out}")


def check_fit(store) -> None:
    """Refuse a fit of the store's data and roles that needs more than a session may use."""
    n_rows, n_cols, density = fit_shape(store)
    needed = engine.fit_memory(n_rows, n_cols, density, model=store.model,
                               n_cut_points=sum(len(v) for v in store.cut_points.values()))
    check(needed, "this fit", "use a subsample, fewer covariates or the command line "
                              "(the exported Python script)")


def fit_shape(store) -> tuple[int, int, float]:
    """(rows, covariate columns after encoding, fraction non-zero) of the store's cohort."""
    covs = list(store.covariates)
    if store.simulated is not None:
        X = store.simulated.X
        cols = [store.simulated.names.index(c) for c in covs]
        nnz = int(X.getnnz(axis=0)[cols].sum()) if cols else 0   # counts, no copy of X
        return store.n_rows, len(cols), nnz / max(1, store.n_rows * len(cols))
    frame = store.data  # column by column: no copy of the covariates
    numeric = [c for c in covs if pd.api.types.is_numeric_dtype(frame[c])]
    text = [c for c in covs if c not in numeric]
    curved = {c: form_columns(f, int(frame[c].nunique())) for c, f in store.forms.items()
              if c in numeric}
    linear = [c for c in numeric if c not in curved]
    levels = {c: max(1, int(frame[c].nunique()) - 1) for c in text}
    width = {**dict.fromkeys(linear, 1), **curved, **levels}
    # a spline's basis, a polynomial, a categorical form and an interaction (a column per pair
    # of its two sides' columns) are dense columns (at most: rows x columns)
    dense = sum(curved.values()) + sum(width[a] * width[b] for a, b in store.interactions)
    n_cols = len(linear) + dense + sum(levels.values())
    nnz = (sum(np.count_nonzero(frame[c].to_numpy(float, na_value=np.nan)) for c in linear)
           + len(frame) * (len(text) + dense))
    return len(frame), n_cols, min(1.0, nnz / max(1, len(frame) * n_cols))


def check_upload(filename: str, size: int) -> None:
    """Refuse an upload whose parsing needs more than a session may use."""
    kind = "parquet" if filename.lower().endswith((".parquet", ".pq")) else "csv"
    check(size * PARSE_FACTOR[kind], f"reading {filename!r}",
          "put it in the server's data directory and query a part of it in the DuckDB tab")


def check_simulation(n: int, p: int, density: float) -> None:
    """Refuse a simulated cohort that needs more than a session may use."""
    needed = (SIMULATION_BYTES["nonzero"] * float(n) * p * density
              + SIMULATION_BYTES["row"] * float(n))
    check(needed, f"a simulated cohort of {n:,} x {p:,}", "simulate fewer rows or covariates, "
          "or a lower density")


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"
