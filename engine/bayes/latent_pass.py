"""The z step and X'z in one pass over X: mu_i = x_i beta, z_i ~ TN(mu_i, 1, y_i), X'z += z_i x_i.

At N = 10^4, p = 10^3 the products X beta and X'z each read all of X from memory (80 MB in
float64), more than the truncated-normal draws cost. Row by row, x_i is read once for its dot
product and is still in the L1 cache for the update of X'z, so one pass reads X once. The
draws are truncated_normal.positive_draw's, from the same Philox streams (element i, step z),
so the chain is the one the separate steps and the GPU's kernels give, to rounding. In float32
X is single precision and the sums (x_i beta, X'z, z'z) are accumulated in double.
"""
import numba
import numpy as np

from .truncated_normal import positive_draw

BLOCK = 8                      # rows whose x_i stay in the L1 cache between the two uses


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dot(row, beta):
    """x_i beta in double (reassociated, so that it vectorises)."""
    total = 0.0
    for j in range(row.size):
        total += np.float64(row[j]) * beta[j]
    return total


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _update(Xtz, X, z, start, stop):
    """X'z += sum_i z_i x_i over rows start..stop, four rows at a time so that X'z is loaded
    and stored once per four rows."""
    i = start
    while i + 4 <= stop:
        r0, r1, r2, r3 = X[i], X[i + 1], X[i + 2], X[i + 3]
        z0, z1, z2, z3 = z[i], z[i + 1], z[i + 2], z[i + 3]
        for j in range(Xtz.size):
            Xtz[j] += (z0 * np.float64(r0[j]) + z1 * np.float64(r1[j])
                       + z2 * np.float64(r2[j]) + z3 * np.float64(r3[j]))
        i += 4
    for k in range(i, stop):
        zk, row = z[k], X[k]
        for j in range(Xtz.size):
            Xtz[j] += zk * np.float64(row[j])


@numba.njit(cache=True, nogil=True)
def _pass(X, beta, sign, key, iteration, step, z, Xtz, first, last):
    Xtz[:] = 0.0
    zz = 0.0
    for start in range(first, last, BLOCK):
        stop = min(start + BLOCK, last)
        for i in range(start, stop):
            s = sign[i]
            zi = s * positive_draw(s * _dot(X[i], beta), key, i, iteration, step)
            z[i] = zi
            zz += zi * zi
        _update(Xtz, X, z, start, stop)
    return zz


def latent_pass(X, beta, sign, stream, z, Xtz, rows=None):
    """Draw z | beta into ``z`` (N,) and X'z into ``Xtz`` (p,), both float64 buffers, from one
    step's Philox stream (rng.Stream); returns z'z. X: C-contiguous (N, p), float64 or float32;
    sign = 2 y - 1. ``rows`` = (first, last): only those rows, their share of X'z and z'z (row
    i still reads element i's stream), so that two threads can each take a share."""
    first, last = (0, X.shape[0]) if rows is None else rows
    return _pass(X, beta, sign, stream.key, stream.iteration, stream.step, z, Xtz, first, last)
