"""How much memory a fit needs, before it runs: so a served app can refuse a fit that would
exhaust the server instead of being killed by it.

``fit_memory`` is an upper bound of the peak resident memory that building a Cohort from
DataFrame columns and ``engine.fit`` (with its summary) add, on CPU. Its terms follow the
layout the fit builds:

- per non-zero covariate value, 80 bytes: the cohort's CSC column (8-byte value, 4-byte row)
  and its assembly, the sorted copy (ModelData: row position and value) with its scratch
  buffers, and the row block the inner solve and the information matrix read (CSR rows for
  the sparse columns, a row-major array for those stored in most rows);
- per row, 200 bytes (Fine-Gray 300: its censoring weights): time, event, order, weights,
  flags, the sort's keys and the backend's per-row state (linear predictor, risk-set sums);
- per pair of columns, 80 bytes: the p x p information matrix, its work copies and inverse;
- 8 MB of fixed overhead.

Measured peaks (VmHWM increase over the fit, a 2-core Linux box; tests/engine/core/test_memory.py checks
peak <= estimate <= 2.5 x peak on such sizes):

| rows x columns, density, model | measured | estimate |
|---|---|---|
| 100,000 x 20, dense, cox | 102 MB | 188 MB |
| 200,000 x 20, 0.1, cox | 58 MB | 80 MB |
| 50,000 x 200, 0.05, cox | 39 MB | 61 MB |
| 5,000 x 400, dense, cox | 77 MB | 182 MB |
| 500,000 x 2, dense, cox | 147 MB | 188 MB |
| 20,000 x 50, dense, fine_gray | 73 MB | 94 MB |
| 200,000 x 5, dense, fine_gray | 114 MB | 148 MB |
| 2,000 x 1,000, 0.2, cox | 60 MB | 120 MB |

(Before dense columns joined the row block as a row-major array, 120 bytes a non-zero: the
dense Cox fits peaked at 136-160 MB.)
"""
from __future__ import annotations

import os

BYTES_PER_NONZERO = 80
BYTES_PER_ROW = {"fine_gray": 300}
DEFAULT_BYTES_PER_ROW = 200
BYTES_PER_COLUMN_PAIR = 80
OVERHEAD = 8_000_000


def fit_memory(n_rows: int, n_cols: int, density: float = 1.0, model: str = "cox",
               n_cut_points: int = 0) -> int:
    """Upper bound of the bytes a fit needs (cohort building, fit and summary), on CPU.

    Parameters
    ----------
    n_rows, n_cols : rows of the data and covariate columns after encoding (one per level of
        a text column but its reference)
    density : the fraction of covariate values that are non-zero (1 for dense data)
    model : "cox" | "fine_gray" | "logistic" | "poisson" | "sccs"
    n_cut_points : cut points of time-varying effects; each can split every row in two
        (episodes), so rows and non-zeros are counted (1 + n_cut_points) times

    Returns
    -------
    int, bytes
    """
    if n_rows < 0 or n_cols < 0 or not 0 <= density <= 1 or n_cut_points < 0:
        raise ValueError(f"fit_memory needs n_rows, n_cols, n_cut_points >= 0 and density in "
                         f"[0, 1]; got {n_rows}, {n_cols}, {n_cut_points} and {density}")
    episodes = float(n_rows) * (1 + n_cut_points)
    nonzeros = episodes * n_cols * density
    per_row = BYTES_PER_ROW.get(model, DEFAULT_BYTES_PER_ROW)
    return int(BYTES_PER_NONZERO * nonzeros + per_row * episodes
               + BYTES_PER_COLUMN_PAIR * float(n_cols) ** 2 + OVERHEAD)


def available_bytes() -> int:
    """Memory the machine has free now: MemAvailable (Linux), else the free physical pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
