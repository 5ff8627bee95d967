"""Large output arrays on huge pages when the kernel has them free, else on plain 4 KB pages.

A scan's output columns (t x m rows, written once) are its largest allocations, and the first
write of fresh memory costs the kernel a fault per page.  On 2 MB transparent huge pages
(NumPy advises them for every array of 4 MB or more) filling a fresh 600 MB array took 0.04 s
here, against 0.26 s on 4 KB pages.  Where no free 2 MB blocks are left, a huge-page fault
makes the kernel compact memory synchronously (THP defrag "madvise", the usual default), so
``paged`` asks ``/proc/buddyinfo`` whether free 2 MB blocks cover twice the array and uses
NumPy's huge-page memory only then.  On this project's virtual machine, huge pages of memory
the guest had not touched yet, or had handed back to its host (free page reporting), took
1.1-1.4 s per 600 MB to fill with no compaction stall counted: the host backing them, paid
again only after memory goes back to the host.  The 1.2-1.5 s of system time in
bench/results/gwas.md, put down to compaction then, was most likely this.
"""
from __future__ import annotations

import mmap

import numpy as np

_HUGE = 2**21                    # a transparent huge page
_PAGE_ORDER = 9                  # buddy order of a 2 MB block of 4 KB pages


def free_huge_bytes(buddyinfo: str = "/proc/buddyinfo") -> int:
    """Bytes free in blocks of 2 MB or more (every zone), or 0 where the file is missing."""
    try:
        with open(buddyinfo) as f:
            lines = f.read().splitlines()
    except OSError:
        return 0
    total = 0
    for line in lines:
        counts = line.split()[4:]                  # "Node 0, zone Normal c0 c1 ... c10"
        total += sum(int(c) << (order - _PAGE_ORDER)
                     for order, c in enumerate(counts) if order >= _PAGE_ORDER)
    return total * _HUGE


def paged(shape, dtype=np.float64) -> np.ndarray:
    """An uninitialised array of ``shape``: NumPy's (huge pages) while free 2 MB blocks cover
    twice its size, else in its own private anonymous map on 4 KB pages (freed with the array)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    nbytes = count * dtype.itemsize
    if (dtype.hasobject or not hasattr(mmap, "MAP_PRIVATE") or count == 0
            or free_huge_bytes() >= 2 * nbytes):
        return np.empty(shape, dtype)
    buffer = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


def tiled(a: np.ndarray, reps: int) -> np.ndarray:
    """``np.tile(a, reps)`` of a 1-D ``a``, into a ``paged`` array."""
    out = paged((reps, len(a)), a.dtype)
    out[:] = a
    return out.reshape(-1)
