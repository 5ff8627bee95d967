"""Whether Numba's parallel kernels may run here: the one switch every prange kernel obeys.

The app fits from several worker threads at once.  Numba's TBB and OpenMP threading layers are
thread-safe; its fallback, workqueue, aborts the process when two threads enter a parallel
region together.  So parallel kernels run only where a thread-safe layer exists, and the serial
twin of each kernel runs elsewhere (every parallel kernel here splits its work into pieces fixed
by the data, never by the thread count, so both give the same numbers).
"""
from __future__ import annotations

import functools
import importlib

import numba


@functools.cache
def parallel_ok() -> bool:
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
