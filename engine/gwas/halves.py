"""A nogil Numba kernel over the two halves of a block's traits, on two threads.

The fused beta/SE/p pass and the per-trait summaries treat every trait row on its own, so the
first half of the rows runs in the calling thread while a helper thread runs the second: the
numbers are the one-thread loop's, bit for bit, and the second core works where the rest of the
scan is single-threaded.  A plain thread that waits on a lock (not an OpenMP team, whose idle
threads spin through the GEMMs between two passes and took CPU time from them on this busy
machine).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_MIN_ROWS = 64                 # fewer trait rows: one thread (a hand-off costs ~50 us)
_pool: list = []
_lock = threading.Lock()


def helper() -> ThreadPoolExecutor:
    """The process's one helper thread (made on first use)."""
    with _lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="gwas-half"))
        return _pool[0]


def run(kernel, rows: int, args_of) -> list:
    """[kernel(*args_of(first half)), kernel(*args_of(second half))] (one call when ``rows``
    is small); ``args_of(slice)`` gives the kernel's arguments for those trait rows."""
    if rows < _MIN_ROWS:
        return [kernel(*args_of(slice(0, rows)))]
    half = rows // 2
    second = helper().submit(kernel, *args_of(slice(half, rows)))
    return [kernel(*args_of(slice(0, half))), second.result()]
