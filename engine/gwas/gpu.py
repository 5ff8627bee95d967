"""The CuPy backend of ``gwas.scan``: SNP blocks through the GPU with host<->device transfers
overlapped with compute (FabregatTraver2014, sec. 4: double buffering, here on the PCIe bus too).

For SNP block k, while the prefetch thread reads and standardises block k + 1 from disk
(``blocks.prefetched``):
- block k is copied into one of two pinned host buffers and sent on a copy stream
  (an asynchronous copy from page-locked memory); its compute stream waits for that copy's
  event only, so the copy of block k overlaps the compute of block k - 1;
- on one of two compute streams: X' = U^T G, the two GEMMs, beta, SE and p (p from the CPU's
  cubic table, ``gls.tail_p``; NaN beyond it, filled on the host with ``special.fdtrc``);
- block k - 1's results are taken back and consumed on the host (summaries, output) while
  block k computes.

What comes back: without a p-value threshold every (trait, SNP) triple (beta, SE, p), copied
asynchronously into pinned buffers; with one only ``Hits`` — the pairs with p <= threshold and
the candidates for each trait's running top list — and, with a run's last block, the per-trait
histograms of p, formed on the device over every block.  That is what lets the largest
problems (10^11 pairs) write hits and summaries without moving the full output over the bus.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import blocks, gls
from .summaries import BINS


@dataclass
class Hits:
    """One SNP block's pairs that came back: ``trait`` (row of the trait), ``column`` (SNP
    within the block), p (NaN beyond the table filled), beta, se, each (k,), in (trait, SNP)
    order; ``m`` SNPs in the block; ``counts`` the per-trait histogram of p (t x ``BINS``)
    of the run's blocks so far when this is the run's last block, else None."""

    m: int
    trait: np.ndarray
    column: np.ndarray
    p: np.ndarray
    beta: np.ndarray
    se: np.ndarray
    counts: np.ndarray | None = None


def run(problem, m_block, out=None, summaries=None):
    """Yield (start, beta, se, p) per SNP block of ``problem`` (host arrays, t x m_b), or
    (start, ``Hits``) when ``summaries`` (a ``Summaries`` with a threshold) is given;
    ``out`` (the CPU's in-place views) is not used: results come back into pinned buffers."""
    import cupy as cp
    import cupyx

    n, t = problem.genotypes.n, problem.UY.shape[1]
    UT = cp.asarray(np.ascontiguousarray(problem.basis.U.T))
    W, YW, yKy = problem.weights(cp)
    h, *coefs, F_max = gls.tail_table(int(problem.dof))
    table = (h, *(cp.asarray(c) for c in coefs), F_max)
    copier = cp.cuda.Stream(non_blocking=True)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    staging = [cupyx.empty_pinned(n * m_block) for _ in range(2)]
    on_device = [cp.empty(n * m_block) for _ in range(2)]
    copied = [None, None]
    results = None if summaries is not None else [
        [cupyx.empty_pinned(t * m_block) for _ in range(3)] for _ in range(2)]
    counts = None if summaries is None else [cp.zeros((t, BINS), dtype=cp.int64)
                                             for _ in range(2)]    # one per stream: no race
    ready = cp.cuda.Event()                  # the uploads above, on the default stream, which
    ready.record()                           # non-blocking streams do not wait for by themselves
    for stream in streams:
        stream.wait_event(ready)
    pending = None
    starts = range(0, problem.genotypes.m, m_block)
    for k, (start, G) in enumerate(blocks.prefetched(problem.genotypes.read, starts, m_block)):
        slot, m_b = k % 2, G.shape[1]
        if copied[slot] is not None:
            copied[slot].synchronize()                # the copy out of this buffer is done
        host = staging[slot][:n * m_b].reshape(n, m_b)
        host[...] = G
        Gd = on_device[slot][:n * m_b].reshape(n, m_b)
        with copier:
            Gd.set(host, stream=copier)
            copied[slot] = cp.cuda.Event()
            copied[slot].record(copier)
        stream = streams[slot]
        stream.wait_event(copied[slot])
        with stream:
            block = _launch(problem, Gd, UT, W, YW, yKy, table, summaries,
                            None if counts is None else counts[slot], cp)
            if summaries is None:
                for a, buffer in zip(block[:3], results[slot]):
                    a.get(stream=stream, out=buffer[:t * m_b].reshape(t, m_b), blocking=False)
        if pending is not None:
            yield _finish(*pending, problem.dof)
        pending = (start, m_b, stream, block, None if results is None else results[slot])
    if pending is not None:
        for stream in streams:
            stream.synchronize()
        yield _finish(*pending, problem.dof, None if counts is None else counts[0] + counts[1])


def _launch(problem, G, UT, W, YW, yKy, table, summaries, counts, cp):
    """beta, se, p (t x m_b device arrays, queued on the current stream) of block G, in
    tiles of ``problem.t_block`` traits, and with ``summaries`` the mask of the pairs to bring
    back (``_candidates``)."""
    X = UT @ G
    X2 = X * X
    kept = cp.sqrt(X2.sum(axis=0) / G.shape[0]) > 1e-10      # gls.rotate's rule, without a
    X *= kept                                                 # host round trip
    X2 *= kept
    t, m_b = W.shape[1], G.shape[1]
    beta, se, p = (cp.empty((t, m_b)) for _ in range(3))
    chosen = None if summaries is None else cp.empty((t, m_b), dtype=bool)
    for j in range(0, t, problem.t_block):
        traits = slice(j, j + problem.t_block)
        b, var = gls.association(X, X2, W[:, traits], YW[:, traits], yKy[traits],
                                 problem.dof, cp)
        beta[traits], se[traits] = b, cp.sqrt(var)
        p[traits] = gls.tail_p(b * b / var, table, cp)
        if summaries is not None:
            chosen[traits] = _candidates(p[traits], j, summaries, counts, cp)
    return beta, se, p, chosen


def _candidates(p, j, summaries, counts, cp):
    """Fold a tile's p (traits j, j + 1, ...) into the device histograms; mark the hits
    (p <= threshold) and the pairs that may enter a trait's top list: p <= min(the trait's
    current k-th best, the largest of the minima of k disjoint chunks of this block, which
    bounds the block's k-th smallest p).  NaN p (beyond the table: p < 1e-289) count as 0."""
    t, m_b = p.shape
    p0 = cp.where(cp.isnan(p), 0.0, p)
    bins = cp.clip((p0 * BINS).astype(cp.int64), 0, BINS - 1)
    bins += cp.arange(t, dtype=cp.int64)[:, None] * BINS
    counts[j:j + t] += cp.bincount(bins.ravel(), minlength=t * BINS).reshape(t, BINS)
    top = summaries.top
    cut = cp.full(t, -np.inf)
    if top:
        cut = cp.asarray(summaries.best[0][j:j + t, top - 1].copy())
        if m_b >= top:
            chunks = p0[:, :m_b - m_b % top].reshape(t, top, -1)
            cut = cp.minimum(cut, chunks.min(axis=2).max(axis=1))
    if summaries.threshold is not None:
        cut = cp.maximum(cut, float(summaries.threshold))
    return p0 <= cut[:, None]


def _finish(start, m_b, stream, block, buffers, dof, counts=None):
    """Wait for block's stream and hand its results to the host (``counts``: the run's
    histograms, given with its last block)."""
    beta, se, p, chosen = block
    stream.synchronize()
    if buffers is None:
        with stream:
            trait, column = (a.get() for a in chosen.nonzero())
            hits = Hits(m_b, trait, column, *(a[chosen].get() for a in (p, beta, se)))
            gls.p_value_beyond(hits.beta, hits.se, hits.p, dof)
            if counts is not None:
                hits.counts = counts.get()
        return start, hits
    t = p.shape[0]
    beta, se, p = (buffer[:t * m_b].reshape(t, m_b) for buffer in buffers)
    if np.isnan(p).any():
        gls.p_value_beyond(beta, se, p, dof)
    return start, beta, se, p
