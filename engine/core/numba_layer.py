"""Whether Numba's parallel kernels run now: the one switch every prange kernel obeys.

The app fits from several worker threads at once.  Numba's TBB and OpenMP threading layers are
thread-safe; its fallback, workqueue, aborts the process when two threads enter a parallel
region together.  So parallel kernels run only where a thread-safe layer exists.  They also
run only while a core is idle: on this shared 2-core machine under a load of 5-9, the L1 fit
at 10^6 x 1,000 took 3.3 s on one thread and 3.6-5.2 s on two (a parallel region waits for
its slowest thread, and a busy machine keeps one of them waiting).  Every parallel kernel
splits its work into pieces fixed by the data, never by the thread count, and has a serial
twin that sums the same pieces in the same order, so the switch never changes a number.
"""
from __future__ import annotations

import functools
import importlib

import numba

from .parallel import core_idle


@functools.cache
def threadsafe() -> bool:
    """A thread-safe threading layer (TBB or OpenMP) is importable and not overridden."""
    if numba.config.THREADING_LAYER == "workqueue":
        return False
    for pool in ("tbbpool", "omppool"):
        try:
            importlib.import_module(f"numba.np.ufunc.{pool}")
            return True
        except ImportError:
            continue
    return False


# less work than this (non-zeros or rows a kernel touches) stays on one thread: waking the
# pool costs more than the work, and small fits (a bootstrap's 150 replicates of 200 rows)
# asked about the load average at every kernel call
PARALLEL_WORK = 1 << 16


def parallel_ok(work: int, least: int = PARALLEL_WORK) -> bool:
    """Parallel kernels now for ``work`` items: at least ``least`` of them, a thread-safe
    layer, two or more Numba threads, and a core idle (the 1-minute load average below the
    usable cores less a half)."""
    if work < least or not threadsafe() or numba.get_num_threads() < 2:
        return False
    return core_idle()
