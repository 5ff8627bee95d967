"""PLINK .bed/.bim/.fam genotypes read in SNP blocks through bed-reader, FaST-LMM's way.

A block is an n x m_b float64 matrix of allele counts (``count_A1`` as in FaST-LMM and
bed-reader: False counts allele 2), standardised per SNP to mean 0 and variance 1 over the
individuals kept (population variance over the observed genotypes), missing genotypes imputed
by the SNP's mean, i.e. 0 after standardising; a constant SNP becomes all zeros.  This is
pysnptools' ``Unit()`` standardiser, which FaST-LMM's ``single_snp`` applies to the tested SNPs
and to the SNPs of its kinship.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from .genotype_kernels import unit_standardize


def standardize(values: np.ndarray) -> np.ndarray:
    """Unit-standardise the columns of an n x m allele-count block in place; NaN -> 0."""
    missing = np.isnan(values)
    if missing.any():
        observed = values.shape[0] - missing.sum(axis=0)
        mean = np.nansum(values, axis=0) / np.maximum(observed, 1)
        values -= mean
        values[missing] = 0.0
    else:
        observed = np.full(values.shape[1], values.shape[0])
        values -= values.mean(axis=0)
    std = np.sqrt((values * values).sum(axis=0) / np.maximum(observed, 1))
    std[std == 0] = np.inf
    values /= std
    return values


@dataclass(frozen=True)
class Genotypes:
    """A PLINK fileset opened for block reads: a view on some individuals and some SNPs.

    ``rows`` are the .fam rows kept (in analysis order), ``columns`` the .bim rows in view;
    ``fid``/``iid``/``bim_*`` are the whole files' columns.
    """

    path: Path
    fid: np.ndarray
    iid: np.ndarray
    bim_sid: np.ndarray
    bim_chrom: np.ndarray
    bim_pos: np.ndarray
    count_A1: bool
    rows: np.ndarray
    columns: np.ndarray

    @classmethod
    def open(cls, bed, count_A1: bool = False) -> "Genotypes":
        """Open ``bed`` (a PLINK prefix or a .bed path), reading only the .fam and .bim."""
        from bed_reader import open_bed

        path = Path(str(bed))
        if path.suffix != ".bed":
            path = path.with_name(path.name + ".bed")
        for suffix in (".bed", ".bim", ".fam"):
            if not path.with_suffix(suffix).exists():
                raise CohortError(f"bed: {path.with_suffix(suffix)} not found; give the prefix "
                                  "of a PLINK .bed/.bim/.fam fileset.")
        with open_bed(path, count_A1=count_A1) as b:
            fid, iid = np.asarray(b.fid, dtype=str), np.asarray(b.iid, dtype=str)
            sid, chrom = np.asarray(b.sid, dtype=str), np.asarray(b.chromosome, dtype=str)
            pos = np.asarray(b.bp_position)
        return cls(path, fid, iid, sid, chrom, pos, bool(count_A1), np.arange(len(iid)),
                   np.arange(len(sid)))

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def m(self) -> int:
        return len(self.columns)

    @property
    def sid(self) -> np.ndarray:
        return self.bim_sid[self.columns]

    @property
    def chrom(self) -> np.ndarray:
        return self.bim_chrom[self.columns]

    @property
    def pos(self) -> np.ndarray:
        return self.bim_pos[self.columns]

    def ids(self) -> pd.MultiIndex:
        """(FID, IID) of the kept individuals, in analysis order."""
        return pd.MultiIndex.from_arrays([self.fid[self.rows], self.iid[self.rows]],
                                         names=["FID", "IID"])

    def keep(self, rows) -> "Genotypes":
        """The same view on the .fam rows ``rows`` (in that order)."""
        return replace(self, rows=np.asarray(rows))

    def select(self, which) -> "Genotypes":
        """The SNPs ``which`` of this view: positions (ints, a slice, a boolean mask)."""
        return replace(self, columns=self.columns[which])

    def read(self, start: int = 0, stop: int | None = None, standardized: bool = True):
        """SNPs ``start:stop`` of the view for the kept individuals: n x m_b float64 (F order)."""
        from bed_reader import open_bed

        columns = self.columns[start:stop]
        with open_bed(self.path, count_A1=self.count_A1, num_threads=1, iid_count=len(self.iid),
                      sid_count=len(self.bim_sid)) as b:
            rows = None if np.array_equal(self.rows, np.arange(len(self.iid))) else self.rows
            if not standardized:
                return b.read(index=(rows, columns), dtype="float64", order="F", num_threads=1)
            codes = b.read(index=(rows, columns), dtype="int8", order="F", num_threads=1)
        return unit_standardize(codes, np.empty(codes.shape, order="F"))
