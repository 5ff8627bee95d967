"""Where the (trait, SNP) rows of a scan go: a DataFrame in memory, or a Parquet dataset.

Both receive each SNP block as it is computed.  ``ParquetSink`` buffers rows up to a byte
budget, then appends them to ``<output>/associations/``: every pair's row, one file per trait
under ``Pheno=<trait>/`` (hive partitioning: a reader loads one trait without touching the
others); with a p-value threshold, the hits, one file per flush in (trait, SNP) order (hits
are few: 10^5 traits would otherwise make 10^5 tiny files at every flush), and writes
``summary.parquet``, ``top_hits.parquet`` and ``h2.parquet`` beside it at the end, so neither
genotypes nor results need fit in memory.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from .pages import paged, tiled

COLUMNS = ["Pheno", "sid_index", "SNP", "Chr", "ChrPos", "PValue", "SnpWeight", "SnpWeightSE",
           "Nullh2"]
_FLOATS = COLUMNS[4:]
_ROW_BYTES = 100            # about one output row in memory (5 floats, ids, codes; with margin)


def frame_of(names, snps: pd.DataFrame, trait, snp, values, ids=None) -> pd.DataFrame:
    """The output frame of rows (trait codes; SNP indices into ``snps``, or None for every SNP
    of ``snps`` once per trait) whose float columns ``values`` (5 x rows: ChrPos, then PValue,
    SnpWeight, SnpWeightSE, Nullh2) become its float columns without a copy; ``ids``: the
    ``id_columns`` when already made."""
    ids = id_columns(names, snps, trait, snp, values) if ids is None else ids
    return pd.DataFrame({**ids, **dict(zip(_FLOATS, values))}, copy=False)   # nothing copied


def id_columns(names, snps: pd.DataFrame, trait, snp, values) -> dict:
    """Pheno, sid_index, SNP, Chr of ``frame_of``'s rows; fills ChrPos (``values[0]``)."""
    def column(name):
        a = snps[name]
        if isinstance(a.dtype, pd.CategoricalDtype):        # SNP ids: codes, not strings
            codes = a.cat.codes.to_numpy()
            codes = tiled(codes, len(names)) if snp is None else codes[snp]
            return pd.Categorical.from_codes(codes, dtype=a.dtype, validate=False)
        a = a.to_numpy()
        return tiled(a, len(names)) if snp is None else a[snp]

    position = snps["ChrPos"].to_numpy()
    if snp is None:
        values[0].reshape(len(names), len(position))[:] = position
    else:
        values[0] = position[snp]
    return {"Pheno": pd.Categorical.from_codes(trait, categories=names, validate=False),
            **{name: column(name) for name in ("sid_index", "SNP", "Chr")}}


def snp_ids(sid) -> pd.Categorical:
    """The SNP column: categorical over the distinct ids in .bim order, so that 10^7 rows hold
    small integer codes instead of Python strings."""
    return pd.Categorical(sid, categories=pd.unique(np.asarray(sid, dtype=object)))


def empty_frame(names) -> pd.DataFrame:
    """No rows (every p above the threshold), with the output's columns and types."""
    snps = pd.DataFrame({"sid_index": np.zeros(0, dtype=np.int64), "SNP": snp_ids([]),
                         "Chr": np.zeros(0), "ChrPos": np.zeros(0)})
    none = np.zeros(0, dtype=np.int64)
    return frame_of(names, snps, none, none, np.empty((5, 0)))


def block_frame(names, snps, snp_rows, h2, p, beta, se, threshold) -> pd.DataFrame:
    """Rows of one block (t x m_b arrays, trait-major as FaST-LMM orders them); only
    p <= threshold when given.  Pheno is categorical over ``names`` (in their order)."""
    t, m_b = p.shape
    if threshold is None:
        trait, snp = np.repeat(np.arange(t), m_b), np.tile(snp_rows, t)
        values = np.empty((5, t * m_b))
        values[1], values[2], values[3] = p.ravel(), beta.ravel(), se.ravel()
    else:
        trait, column = np.nonzero(p <= threshold)
        return pairs_frame(names, snps, snp_rows, h2, trait, column, p[trait, column],
                           beta[trait, column], se[trait, column])
    values[4] = np.asarray(h2)[trait]
    return frame_of(names, snps, trait, snp, values)


def pairs_frame(names, snps, snp_rows, h2, trait, column, p, beta, se) -> pd.DataFrame:
    """Rows of the listed (trait, block column) pairs of a block, in that order."""
    values = np.empty((5, len(trait)))
    values[1], values[2], values[3] = p, beta, se
    values[4] = np.asarray(h2)[trait]
    return frame_of(names, snps, trait, snp_rows[column], values)


def hits_frame(names, snps, snp_rows, h2, hits, threshold) -> pd.DataFrame:
    """Rows of a block's ``gpu.Hits`` with p <= threshold (the top-list candidates above it
    are not output rows)."""
    keep = hits.p <= threshold
    return pairs_frame(names, snps, snp_rows, h2, hits.trait[keep], hits.column[keep],
                       hits.p[keep], hits.beta[keep], hits.se[keep])


def ordered(frame: pd.DataFrame, names) -> pd.DataFrame:
    """Rows by trait (in ``names`` order), then by tested SNP; Pheno categorical over names."""
    pheno = frame["Pheno"].astype("category").cat.set_categories(names)
    key = pheno.cat.codes.to_numpy().astype(np.int64) * (1 + int(frame["sid_index"].max())) \
        + frame["sid_index"].to_numpy() if len(frame) else np.zeros(0, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    out = frame.assign(Pheno=pheno)[COLUMNS]
    if not (np.diff(order) == 1).all():
        out = out.iloc[order]
    return out.reset_index(drop=True)


class FrameSink:
    """Keep the rows in memory.  Without a threshold every (trait, SNP) row is known in
    advance: each block's values go straight to their place in the final arrays."""

    def __init__(self, names, snps, threshold):
        self.names, self.snps, self.threshold = names, snps, threshold
        m, t = len(snps), len(names)
        self.values = paged((5, t * m)) if threshold is None else None
        self.parts = []
        self.ids = None if self.values is None else self.ids_meanwhile()

    def ids_meanwhile(self):
        """A future of ``every_id``: every row is known in advance, so a thread of its own
        makes the id columns (200 MB at 10^7 rows) while the scan computes (not one of
        ``parts``' helpers, whose parts of the scan's passes would wait for it)."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gwas-ids")
        future = pool.submit(self.every_id)
        pool.shutdown(wait=False)                   # the thread ends with its one task
        return future

    def every_id(self) -> dict:
        m, t = len(self.snps), len(self.names)
        trait = paged((t, m), np.int16 if t < 2**15 else np.int32)
        trait[:] = np.arange(t)[:, None]
        return id_columns(self.names, self.snps, trait.reshape(-1), None, self.values)

    def target(self, positions):
        """``views(start, stop)``: beta, se, p (t x block views of the final arrays) for the
        SNPs ``positions[start:stop]`` when they are consecutive, so a block is computed in
        place; None where rows are filtered (a threshold)."""
        if self.values is None:
            return None
        t, m = len(self.names), len(self.snps)

        def views(start, stop):
            rows = positions[start:stop]
            if not (np.diff(rows) == 1).all():
                return None
            place = slice(rows[0], rows[-1] + 1)
            return tuple(self.values[row].reshape(t, m)[:, place] for row in (2, 3, 1))
        return views

    def write(self, snp_rows, h2, p, beta, se):
        if self.values is None:
            self.parts.append(block_frame(self.names, self.snps, snp_rows, h2, p, beta, se,
                                          self.threshold))
            return
        t, m = p.shape[0], len(self.snps)
        contiguous = bool((np.diff(snp_rows) == 1).all())
        place = slice(snp_rows[0], snp_rows[-1] + 1) if contiguous else snp_rows
        if not np.may_share_memory(p, self.values):             # not computed in place
            for row, a in zip((1, 2, 3), (p, beta, se)):
                self.values[row].reshape(t, m)[:, place] = a
        self.values[4].reshape(t, m)[:, place] = np.asarray(h2)[:, None]

    def write_hits(self, snp_rows, h2, hits):
        """A block's ``gpu.Hits`` (only with a threshold: rows are filtered)."""
        self.parts.append(hits_frame(self.names, self.snps, snp_rows, h2, hits, self.threshold))

    def frame(self) -> pd.DataFrame:
        if self.values is None:
            if not self.parts:
                return empty_frame(self.names)
            return ordered(pd.concat(self.parts, ignore_index=True), self.names)
        return frame_of(self.names, self.snps, None, None, self.values, self.ids.result())

    def close(self, result):
        """Nothing to flush in memory."""


class ParquetSink:
    """Stream every block's rows to ``<output>/associations`` partitioned by trait."""

    def __init__(self, output, names, snps, threshold, buffer_bytes=2**28):
        self.root = Path(output)
        self.dataset = self.root / "associations"
        if self.dataset.exists() and any(self.dataset.iterdir()):
            raise FileExistsError(f"output: {self.dataset} already holds results; remove it or "
                                  "choose another output folder.")
        self.dataset.mkdir(parents=True, exist_ok=True)
        self.names, self.snps, self.threshold = names, snps, threshold
        self.buffer, self.buffered, self.buffer_rows = [], 0, max(1, buffer_bytes // _ROW_BYTES)
        self.flushes = 0

    def target(self, positions):
        """Rows go through a buffer: nothing is computed in place."""
        return None

    def write(self, snp_rows, h2, p, beta, se):
        """Buffer a block's rows; write them once ``buffer_bytes`` are held (one file per
        trait per flush: few, large files even with thousands of traits and a threshold)."""
        self.add(block_frame(self.names, self.snps, snp_rows, h2, p, beta, se, self.threshold))

    def write_hits(self, snp_rows, h2, hits):
        """A block's ``gpu.Hits`` (only with a threshold: rows are filtered)."""
        self.add(hits_frame(self.names, self.snps, snp_rows, h2, hits, self.threshold))

    def add(self, frame):
        if len(frame):
            self.buffer.append(frame)
            self.buffered += len(frame)
        if self.buffered >= self.buffer_rows:
            self.flush()

    def flush(self):
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buffer:
            return
        frame = pd.concat(self.buffer, ignore_index=True)
        if self.threshold is None:
            pq.write_to_dataset(pa.Table.from_pandas(frame, preserve_index=False), self.dataset,
                                partition_cols=["Pheno"], max_partitions=len(self.names) + 1,
                                basename_template=f"part{self.flushes:06d}-{{i}}.parquet")
        else:
            ordered(frame, self.names).to_parquet(
                self.dataset / f"part{self.flushes:06d}.parquet", index=False)
        self.buffer, self.buffered = [], 0
        self.flushes += 1

    def close(self, result):
        self.flush()
        result.summary.to_parquet(self.root / "summary.parquet")
        result.top_hits.to_parquet(self.root / "top_hits.parquet")
        result.h2.rename(columns=str).to_parquet(self.root / "h2.parquet")

    @staticmethod
    def read(output, names) -> pd.DataFrame:
        """The whole dataset back as one frame, in ``FrameSink``'s order."""
        dataset = Path(output) / "associations"
        if not any(dataset.iterdir()):
            return empty_frame(names)
        return ordered(pd.read_parquet(dataset), names)
