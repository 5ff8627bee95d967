"""The dense columns of a row block (a spline basis, age, a continuous exposure: stored in at
least row_block_parallel.DENSE_FILL of the rows) as one n x d row-major array Z, filled once and
kept while the same columns are asked for.

An unpenalised exposure's columns sit in every working set of the Gram inner solve, and the
collinearity check before the solve reads the same columns: at 10^6 rows each fill of a
4-column spline basis took 15 ms, paid once by the check and once more at every change of
working set.  Z is only read after its fill, so the check, the working sets and the
information after the fit share one array.
"""
from __future__ import annotations

import numpy as np

from . import row_block_parallel as rb


class DenseColumns:
    """Z of the last columns asked for (row_block_parallel.dense_block), over the CSC arrays
    ``indptr, indices, values, vptr`` of n rows."""

    def __init__(self, indptr, indices, values, vptr, n: int):
        self._arrays = (indptr, indices, values, vptr)
        self._n = int(n)
        self._cols = self._Z = None

    def block(self, cols: np.ndarray) -> np.ndarray:
        """Z of the columns ``cols`` (in that order), read only: kept from the last call when
        the columns are the same, else filled (and kept in place of the last)."""
        cols = np.asarray(cols, np.int64)
        if self._cols is None or not np.array_equal(cols, self._cols):
            self._Z = rb.dense_block(*self._arrays, cols, self._n)
            self._cols = cols.copy()
        return self._Z

    def release(self) -> None:
        """Forget Z (filled again when next asked for)."""
        self._cols = self._Z = None
