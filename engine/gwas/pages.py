"""Large output arrays on plain 4 KB pages.

NumPy asks Linux to back every array of 4 MB or more with transparent huge pages
(``madvise(MADV_HUGEPAGE)``).  Where the kernel compacts memory synchronously on such a fault
(THP defrag "madvise", the usual default), a busy machine pays for each 2 MB page: filling a
fresh 600 MB array cost 1.2-1.5 s of system time here, against 0.21 s on 4 KB pages
(bench/results/gwas.md).  A scan's output columns (t x m rows, written once) are therefore
allocated in their own anonymous memory maps, which the kernel pages in 4 KB at a time.
"""
from __future__ import annotations

import mmap

import numpy as np


def paged(shape, dtype=np.float64) -> np.ndarray:
    """An uninitialised array of ``shape`` in its own private anonymous map (freed with the
    array); a plain ``np.empty`` for object arrays or where ``mmap`` has no private maps."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    if dtype.hasobject or not hasattr(mmap, "MAP_PRIVATE") or count == 0:
        return np.empty(shape, dtype)
    buffer = mmap.mmap(-1, count * dtype.itemsize, flags=mmap.MAP_PRIVATE)
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


def tiled(a: np.ndarray, reps: int) -> np.ndarray:
    """``np.tile(a, reps)`` of a 1-D ``a``, into a ``paged`` array."""
    out = paged((reps, len(a)), a.dtype)
    out[:] = a
    return out.reshape(-1)
