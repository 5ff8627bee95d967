"""Where the (trait, SNP) rows of a scan go: a DataFrame in memory, or a Parquet dataset.

Both receive each SNP block as it is computed.  ``ParquetSink`` appends one file per block and
trait to ``<output>/associations/Pheno=<trait>/`` (hive partitioning: a reader can load one trait
without touching the others) and writes ``summary.parquet``, ``top_hits.parquet``,
``h2.parquet`` beside it at the end, so neither genotypes nor results need fit in memory.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["Pheno", "sid_index", "SNP", "Chr", "ChrPos", "PValue", "SnpWeight", "SnpWeightSE",
           "Nullh2"]


def block_frame(snps: pd.DataFrame, names, h2, p, beta, se, threshold) -> pd.DataFrame:
    """Rows of one block, trait-major (FaST-LMM's order); only p <= threshold when given.
    Pheno is categorical over ``names`` (in their order)."""
    m_b, t = p.shape
    if threshold is None:
        snp, trait = np.tile(np.arange(m_b), t), np.repeat(np.arange(t), m_b)
        values = [a.T.ravel() for a in (p, beta, se)]
    else:
        trait, snp = np.nonzero(p.T <= threshold)
        values = [a[snp, trait] for a in (p, beta, se)]
    frame = pd.DataFrame({"Pheno": pd.Categorical.from_codes(trait, categories=names)})
    for column in ("sid_index", "SNP", "Chr", "ChrPos"):
        frame[column] = snps[column].to_numpy()[snp]
    frame["PValue"], frame["SnpWeight"], frame["SnpWeightSE"] = values
    frame["Nullh2"] = np.asarray(h2)[trait]
    return frame


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
    """Keep every block's rows; ``frame()`` concatenates them in order."""

    def __init__(self):
        self.parts = []

    def write(self, snps, names, h2, p, beta, se, threshold):
        self.parts.append(block_frame(snps, names, h2, p, beta, se, threshold))

    def frame(self, names) -> pd.DataFrame:
        return ordered(pd.concat(self.parts, ignore_index=True), names)

    def close(self, result):
        """Nothing to flush in memory."""


class ParquetSink:
    """Stream every block's rows to ``<output>/associations`` partitioned by trait."""

    def __init__(self, output):
        self.root = Path(output)
        self.dataset = self.root / "associations"
        if self.dataset.exists() and any(self.dataset.iterdir()):
            raise FileExistsError(f"output: {self.dataset} already holds results; remove it or "
                                  "choose another output folder.")
        self.dataset.mkdir(parents=True, exist_ok=True)
        self.blocks = 0

    def write(self, snps, names, h2, p, beta, se, threshold):
        import pyarrow as pa
        import pyarrow.parquet as pq

        frame = block_frame(snps, names, h2, p, beta, se, threshold)
        if len(frame):
            pq.write_to_dataset(pa.Table.from_pandas(frame, preserve_index=False), self.dataset,
                                partition_cols=["Pheno"],
                                basename_template=f"block{self.blocks:06d}-{{i}}.parquet")
        self.blocks += 1

    def close(self, result):
        result.summary.to_parquet(self.root / "summary.parquet")
        result.top_hits.to_parquet(self.root / "top_hits.parquet")
        result.h2.rename(columns=str).to_parquet(self.root / "h2.parquet")

    @staticmethod
    def read(output, names) -> pd.DataFrame:
        """The whole dataset back as one frame, in ``FrameSink``'s order."""
        dataset = Path(output) / "associations"
        if not any(dataset.iterdir()):
            return ordered(block_frame(pd.DataFrame({c: [] for c in COLUMNS}), names, [],
                                       np.zeros((0, len(names))), None, None, 1.0), names)
        return ordered(pd.read_parquet(dataset), names)
