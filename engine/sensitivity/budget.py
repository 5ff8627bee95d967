"""What a grid will cost, before it runs: memory from ``engine.fit_memory``, time from the cost
model's passes (docs/cost_model.md), so a grid larger than the limits a user sets is refused.

Memory: each worker holds one layout at a time, a fit of the cohort with every column, split at
the cut points and the ends of follow-up (``fit_memory``'s episodes); worker processes add up,
worker threads share the layout and add only their per-row state (``THREAD_BYTES_PER_ROW``:
weights, flags, linear predictor, risk-set terms and scratch, about 16 vectors of 8 bytes).
Time: every layout is sorted once (about 40 ns per row and 10 ns per stored value, the radix
sort and the re-indexing); every variant takes about 6 outer steps from its neighbour's solution
(4-7 at 10^5 and 10^6 x 1,000; 12 from zero, docs/cost_model.md), each 3 row passes of about
100 bytes per row and about 8 bytes per stored value of X (the working set's dots, image and
Gram matrix, and the KKT check's pass over the rest), at 4 GB/s of memory traffic on one core
of the 2-core box the cost model was measured on.  The estimate is an order of magnitude, meant
to refuse a grid that would take hours, not to predict seconds: it is about 1.4-2x the CPU
time measured at 10^5 and 10^6 x 1,000 (bench/results/sensitivity_*; it was 10x before the
grid's warm starts were counted).
"""
from __future__ import annotations

from ..core.memory import fit_memory
from ..core.parallel import usable_cores

SORT_NS_PER_ROW, SORT_NS_PER_NONZERO = 40.0, 10.0
OUTER_STEPS = 6
ROW_BYTES_PER_STEP, NONZERO_BYTES_PER_STEP = 300.0, 8.0
BYTES_PER_SECOND = 4e9
THREAD_BYTES_PER_ROW = 128


def grid_cost(cohort, axes, n_variants: int, n_layouts: int, parallel=None,
              n_jobs=None) -> dict:
    """Bytes and seconds a grid is estimated to need: {"bytes", "seconds"}."""
    cuts = [len(c) for d in axes.choices["cut_points"].values() if d for c in d.values()]
    ends = sum(t is not None for t in axes.choices["follow_up"].values())
    return grid_cost_of_shape(cohort.n, cohort.p, cohort.X.nnz, n_variants, n_layouts,
                              (max(cuts) if cuts else 0) + ends, parallel, n_jobs)


def grid_cost_of_shape(n: int, p: int, nnz: int, n_variants: int, n_layouts: int,
                       n_cut: int = 0, parallel=None, n_jobs=None) -> dict:
    """``grid_cost`` from the cohort's shape (rows, columns, stored values) before it is built;
    ``n_cut``: the most cut points of a design plus the number of ends of follow-up;
    ``parallel``, ``n_jobs`` as ``engine.sensitivity_study``'s."""
    density = nnz / max(1, n * p)
    one = fit_memory(n, p, density, "cox", n_cut)
    episodes = n * (1 + n_cut)
    workers = grid_workers(parallel, n_jobs)
    memory = (one + THREAD_BYTES_PER_ROW * episodes * workers if parallel == "threads"
              else one * workers)
    nnz = nnz * (1 + n_cut)
    sort = n_layouts * (SORT_NS_PER_ROW * episodes + SORT_NS_PER_NONZERO * nnz) * 1e-9
    step = (ROW_BYTES_PER_STEP * episodes + NONZERO_BYTES_PER_STEP * nnz) / BYTES_PER_SECOND
    seconds = sort + n_variants * OUTER_STEPS * step
    return {"bytes": int(memory), "seconds": seconds / workers}


def grid_workers(parallel=None, n_jobs=None) -> int:
    """How many workers fit a grid: 1 serially, ``n_jobs`` or else the usable cores on threads
    and 2 on processes or Dask (engine.parallel's defaults)."""
    if parallel is None or parallel == "serial":
        return 1
    return n_jobs or (usable_cores() if parallel == "threads" else 2)


def check_budget(cost: dict, max_memory=None, max_seconds=None) -> None:
    """Raise a MemoryError / TimeoutError naming the estimate and the fix when over a limit."""
    if max_memory is not None and cost["bytes"] > max_memory:
        raise MemoryError(f"the grid is estimated to need {cost['bytes'] / 1e9:.2f} GB, more "
                          f"than max_memory={max_memory / 1e9:.2f} GB: vary fewer strata or "
                          "cut-point designs at once, run fewer workers, or raise max_memory.")
    if max_seconds is not None and cost["seconds"] > max_seconds:
        raise TimeoutError(f"the grid is estimated to take {cost['seconds']:.0f} s, more than "
                           f"max_seconds={max_seconds:g}: vary fewer choices, run it on more "
                           "workers (parallel=), or raise max_seconds.")
