"""NumPy references of the GPU backend's device passes, beside the CUDA sources they mirror.

``grad_hess`` is cuda/coordinate_grad_hess.cu written with the NumPy flag-value scan of
tests/support/flag_scan_reference.py: the same tiles, the same two-flag tuple (risk-set sums
restarting at stratum heads, tied events' sums at tie-group heads), the same entry-time merge
through cox_gpu_layout.late and the same fixed-order reductions (per thread, per block, over
blocks), in any dtype, so a float32 run of it estimates the float32 kernels' rounding.
"""
from __future__ import annotations

import numpy as np

from flag_scan_reference import IPT, THREADS, segmented_scan
from engine.regression.row_flags import GROUP_HEAD
from engine.regression.modeldata import EVENT, GROUP_END, HEAD


def block_sum(values):
    """The kernels' sum: serial per thread (IPT items), a halving tree per block, then the
    finish kernel's strided per-thread sums and tree."""
    tile = THREADS * IPT
    G = max(1, -(-values.size // tile))
    v = np.zeros(G * tile, values.dtype)
    v[:values.size] = values
    per_thread = np.zeros((G, THREADS), values.dtype)
    for k in range(IPT):
        per_thread += v.reshape(G, THREADS, IPT)[:, :, k]
    partial = _tree(per_thread)
    strided = np.zeros(THREADS, values.dtype)
    for base in range(0, G, THREADS):
        chunk = partial[base:base + THREADS]
        strided[:chunk.size] += chunk
    return _tree(strided[None])[0]


def _tree(x):
    x = x.copy()
    half = x.shape[-1] // 2
    while half > 0:
        x[..., :half] += x[..., half:2 * half]
        half //= 2
    return x[..., 0]


def grad_hess(md, lay, D, flags, x, efron, dtype=np.float64):
    """dl/dbeta_j and -d2l/dbeta_j^2 for the dense column x, as the fused kernel computes them.

    lay: cox_gpu_layout.Layout; flags: current flags (EVENT as after set_weights)."""
    D, x, w = (np.asarray(a, dtype) for a in (D, x, md.weights))
    ev = ((flags & EVENT) != 0).astype(dtype)
    xd = x * D
    R = segmented_scan(np.stack((D, xd, x * xd)), (lay.flags & HEAD) != 0)
    E = segmented_scan(np.stack((ev * D, ev * xd, ev * x * xd, ev * w, ev)),
                       (lay.flags & GROUP_HEAD) != 0)
    at = np.flatnonzero(((flags & GROUP_END) != 0) & (E[4] > 0))
    a = R[:, at]
    if md.start is not None:
        so = md.start_order
        S = segmented_scan(np.stack((D[so], xd[so], x[so] * xd[so])), lay.start_heads != 0)
        late = lay.late[at]
        a = a - np.where(late >= 0, S[:, late], dtype(0))
    d = E[4, at].astype(np.int64)
    W = E[3, at]
    multi = efron & (d > 1)
    count = np.where(multi, d, 1)
    grp = np.repeat(np.arange(at.size), count)
    ell = np.arange(grp.size) - (np.cumsum(count) - count)[grp]
    c = (ell / np.maximum(d, 1)[grp]).astype(dtype)
    wt = np.where(multi, W / np.maximum(d, 1).astype(dtype), W)[grp].astype(dtype)
    den = a[0, grp] - c * E[0, at][grp]
    m1 = (a[1, grp] - c * E[1, at][grp]) / den
    m2 = (a[2, grp] - c * E[2, at][grp]) / den
    first = np.cumsum(count) - count
    g_rows = ev * w * x
    h_rows = np.zeros_like(D)
    g_rows[at] -= np.add.reduceat(wt * m1, first) if grp.size else 0
    h_rows[at] += np.add.reduceat(wt * (m2 - m1 * m1), first) if grp.size else 0
    return float(block_sum(g_rows)), float(block_sum(h_rows))
