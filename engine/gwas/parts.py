"""A nogil kernel over parts of a block's rows (traits or SNPs), one part per core, on threads.

The fused beta/SE/p pass, the per-trait summaries, the h2 sums and each SNP's column of a block
treat every row on their own, so the rows are cut into as many consecutive parts as the process
has cores: the first runs in the calling thread, the others in helper threads, and the numbers
are the one-thread loop's, bit for bit.  Plain threads that wait on a lock (not an OpenMP team,
whose idle threads spin through the GEMMs between two passes and took CPU time from them on
this busy machine).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from ..core.parallel import usable_cores

_MIN_ROWS = 64                 # rows a part at least (a hand-off costs ~50 us)
CORES = usable_cores()
_pool: list = []
_lock = threading.Lock()


def helpers() -> ThreadPoolExecutor:
    """The process's helper threads, one fewer than its cores (made on first use)."""
    with _lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(max_workers=max(1, CORES - 1),
                                            thread_name_prefix="gwas-part"))
        return _pool[0]


def run(kernel, rows: int, args_of) -> list:
    """[kernel(*args_of(part)) for each part] over consecutive slices of ``rows`` (one call when
    ``rows`` is small); ``args_of(slice)`` gives the kernel's arguments for those rows."""
    count = max(1, min(CORES, rows // _MIN_ROWS))
    bounds = [rows * i // count for i in range(count + 1)]
    parts = [slice(a, b) for a, b in zip(bounds, bounds[1:])]
    others = [helpers().submit(kernel, *args_of(part)) for part in parts[1:]]
    return [kernel(*args_of(parts[0]))] + [future.result() for future in others]
