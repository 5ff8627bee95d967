"""Block sizes from a memory budget, and SNP blocks read one ahead by a prefetch thread.

While block k is being computed a single worker thread reads and standardises block k + 1 from
the .bed (bed-reader releases the GIL), so disk I/O hides behind the GEMMs (seed 004, sec. 4:
double buffering).
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from .summaries import BINS

_UNITS = {"": 1, "B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}
_BYTES_PER_TEST = 160        # beta, Var, F, p and the output row of one (SNP, trait) pair


def parse_memory(memory) -> int:
    """'4GB', '512MB', '1.5 GB' or a number of bytes -> bytes (binary units)."""
    if isinstance(memory, (int, float)) and memory > 0:
        return int(memory)
    match = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?B?)\s*", str(memory).upper())
    if not match:
        raise ValueError(f"memory={memory!r}: give bytes or a size such as '4GB' or '512MB'.")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def block_sizes(budget: int, n: int, m: int, t: int) -> tuple[int, int]:
    """(SNPs per block, traits per block) so that the working set fits ``budget`` bytes.

    Held throughout: the kinship, its eigenvectors and the eigensolver's work space (4 n x n),
    the rotated traits, W and Y' o W (3 n x t) and the p-value histograms (``BINS`` x t).  Per
    SNP of a block: two raw blocks (the one computing, the one prefetched) and X', X' o X'
    (4 n doubles).  Per (SNP, trait) pair: ``_BYTES_PER_TEST``.
    """
    fixed = 8 * (4 * n * n + 3 * n * t + BINS * t)
    if fixed >= budget:
        raise ValueError(f"memory={budget:,} bytes cannot hold the kinship's eigenvectors and "
                         f"{t:,} rotated traits ({fixed:,} bytes); raise memory=.")
    per_snp = 32 * n
    t_block = t
    while t_block > 1 and fixed + 64 * (per_snp + _BYTES_PER_TEST * t_block) > budget:
        t_block = (t_block + 1) // 2
    m_block = (budget - fixed) // (per_snp + _BYTES_PER_TEST * t_block)
    return int(max(1, min(m, m_block))), int(t_block)


def prefetched(read, starts, size):
    """Yield (start, read(start, start + size)) for each start, the next read in flight."""
    starts = list(starts)
    if not starts:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gwas-prefetch") as pool:
        pending = pool.submit(read, starts[0], starts[0] + size)
        for i, start in enumerate(starts):
            block = pending.result()
            if i + 1 < len(starts):
                pending = pool.submit(read, starts[i + 1], starts[i + 1] + size)
            yield start, block
