"""A NumPy reference of the flag-value segmented scan that cuda/flag_scan.cuh implements.

Yang2024 sec. 2.6, eq. 18: pairs (f, a) of a segment-head flag and a value, combined by

    (f_i, a_i) (+)s (f_j, a_j) = (f_i | f_j,  a_j if f_j else a_i + a_j),

turn a segmented scan into one ordinary scan, whatever the number of segments.  ``segmented_scan``
computes it with the CUDA code's own decomposition and order of additions (tiles of
THREADS x IPT items; a serial scan of IPT items per thread; a Hillis-Steele scan of the thread
aggregates per tile; an exclusive scan of the tile aggregates in rounds of THREADS; the tile
re-scanned from its carry), so the arithmetic the kernels do is pinned on a machine without a
GPU, and a float32 run of it estimates the float32 kernels' rounding.  It also stands in for the
device scan when the GPU backend's host code is checked on the CPU.
"""
from __future__ import annotations

import numpy as np

THREADS = 256   # SCAN_THREADS in flag_scan.cuh
IPT = 4         # SCAN_IPT


def combine(left, right):
    """The operator of Yang2024 eq. 18 on (flag, value) pairs of arrays (flags broadcast)."""
    (fa, va), (fb, vb) = left, right
    return fa | fb, np.where(fb, vb, va + vb)


def _hillis_steele(f, v, axis_len):
    """Inclusive scan along the last axis of (f, v), as block_inclusive_scan does it."""
    off = 1
    while off < axis_len:
        nf, nv = f.copy(), v.copy()
        nf[..., off:], nv[..., off:] = combine((f[..., :-off], v[..., :-off]),
                                               (f[..., off:], v[..., off:]))
        f, v = nf, nv
        off *= 2
    return f, v


def _exclusive(f, v):
    """Shift an inclusive scan along the last axis by one, the identity in front."""
    ef, ev = np.zeros_like(f), np.zeros_like(v)
    ef[..., 1:], ev[..., 1:] = f[..., :-1], v[..., :-1]
    return ef, ev


def segmented_scan(values, heads, reverse=False, threads=THREADS, ipt=IPT):
    """Inclusive segmented sums of ``values`` (shape (..., n)) along the last axis.

    heads : (n,) bool, True where a segment starts (in reading order: with ``reverse`` the rows
    are read from the end, giving suffix sums, and a segment starts at its last row).
    The dtype of ``values`` is the dtype of the arithmetic.
    """
    v = np.asarray(values)
    h = np.asarray(heads, bool)
    if reverse:
        v, h = v[..., ::-1], h[::-1]
    n = v.shape[-1]
    if n == 0:
        return v.copy()
    tile = threads * ipt
    G = -(-n // tile)
    lead = v.shape[:-1]
    V = np.zeros(lead + (G * tile,), v.dtype)
    V[..., :n] = v
    F = np.zeros(G * tile, bool)
    F[:n] = h
    V = V.reshape(lead + (G, threads, ipt))
    F = F.reshape(G, threads, ipt)

    # each thread's aggregate of its ipt items, from the identity
    af, av = np.zeros((G, threads), bool), np.zeros(lead + (G, threads), v.dtype)
    for k in range(ipt):
        af, av = combine((af, av), (F[..., k], V[..., k]))
    # per tile: block scan of the thread aggregates; the tile aggregate is the last one
    sf, sv = _hillis_steele(af, av, threads)
    tf, tv = sf[:, -1], sv[..., -1]
    # carry into each tile: exclusive scan of the tile aggregates, ``threads`` per round
    cf, cv = np.zeros(G, bool), np.zeros(lead + (G,), v.dtype)
    rf, rv = np.zeros((), bool), np.zeros(lead, v.dtype)
    for base in range(0, G, threads):
        m = min(threads, G - base)
        pf = np.zeros(threads, bool)
        pv = np.zeros(lead + (threads,), v.dtype)
        pf[:m], pv[..., :m] = tf[base:base + m], tv[..., base:base + m]
        qf, qv = _hillis_steele(pf, pv, threads)
        bf, bv = _exclusive(qf, qv)
        of, ov = combine((rf, rv[..., None]), (bf, bv))
        cf[base:base + m], cv[..., base:base + m] = of[:m], ov[..., :m]
        rf, rv = combine((rf, rv), (qf[-1], qv[..., -1]))
    # re-scan: thread prefix = carry (+)s the threads before it, then its items one by one
    bf, bv = _exclusive(sf, sv)
    runf, runv = combine((cf[:, None], cv[..., None]), (bf, bv))
    out = np.empty(lead + (G, threads, ipt), v.dtype)
    for k in range(ipt):
        runf, runv = combine((runf, runv), (F[..., k], V[..., k]))
        out[..., k] = runv
    out = out.reshape(lead + (G * tile,))[..., :n]
    return out[..., ::-1].copy() if reverse else out
