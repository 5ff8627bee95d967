"""The bit flags packed into one byte per sorted row: the scans' only view of the row structure.

Defined once here for every backend; the CUDA kernels' ``FLAG_*`` defines in
backends/cuda/flag_scan.cuh carry the same values (a test checks they agree).
"""
from __future__ import annotations

import numpy as np

EVENT = np.uint8(1)         # the row ends with the event of interest
HEAD = np.uint8(2)          # first row of a stratum: the scan restarts here
GROUP_END = np.uint8(4)     # last row of a block of equal times within a stratum
GROUP_HEAD = np.uint8(8)    # first row of a block of equal times (GPU layout)
STRATUM_TAIL = np.uint8(16)  # last row of a stratum (GPU layout)
