"""``gwas.scan``: mixed-model association of every tested SNP with every trait (FabregatTraver2014).

The steps: match phenotypes and covariates to the .fam; for each kinship (one for "all", one per
chromosome for "loco") one eigendecomposition in the covariates' complement, h2 of every trait
(``heritability``), then SNP blocks (read one ahead, ``blocks``) x trait blocks through
Algorithm 5 as GEMMs (``gls``), results kept in memory or streamed to Parquet (``output``) with
per-trait summaries.  Numbers are FaST-LMM ``single_snp``'s.
"""
from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..core.errors import Cancelled, CohortError
from . import blocks, gls, gls_kernels, heritability, missing, parts
from .genotypes import Genotypes
from .kinship import Eigenbasis, covariate_complement, gram, scale_to_n
from .output import FrameSink, ParquetSink, snp_ids
from .phenotypes import check_values, match, read_table
from .summaries import Summaries

BACKENDS = ("cpu", "gpu", "dask")
KINSHIPS = ("loco", "all")
_TILE_SNPS, _TILE_TRAITS = 1024, 512       # CPU tiles of the GEMM outputs (a few MB: in cache)


@dataclass
class GwasResult:
    """What ``scan`` found.

    ``frame``: one row per (trait, SNP), FaST-LMM's columns, Pheno and SNP as categoricals
    over the traits and the tested SNPs' ids (read back from Parquet when the scan streamed to
    ``output``); ``h2``/``sigma2``: per trait x kinship ("all" or chromosome);
    ``summary``: per trait tests, hits, min_p, lambda_gc, h2; ``top_hits``; ``timings``
    (seconds: prepare = reading and matching, null_model = kinships, eigendecompositions and
    h2, scan = the SNP blocks, write = assembling or flushing the output).
    """

    h2: pd.DataFrame
    sigma2: pd.DataFrame
    summary: pd.DataFrame
    top_hits: pd.DataFrame
    individuals: pd.MultiIndex
    output: Path | None
    timings: dict = field(default_factory=dict)
    spec: dict = field(default_factory=dict)
    _frame: pd.DataFrame | None = None

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = ParquetSink.read(self.output, list(self.h2.index))
        return self._frame


def scan(bed, pheno, covar=None, kinship="loco", snps=None, count_A1=False, backend="cpu",
         memory="4GB", output=None, *, h2_method="reml", pvalue_threshold=None, top=10,
         scheduler=None, n_workers=2, progress=None, cancel=None) -> GwasResult:
    """Test every SNP of ``bed`` (or ``snps``: a slice, positions or SNP ids) against every
    trait of ``pheno`` with covariates ``covar`` (an intercept is added) under a linear mixed
    model whose kinship is built from the tested SNPs ("loco", "all"), given as an n x n array
    (individuals in .fam order), or built from all SNPs of another PLINK prefix.

    ``memory`` bounds the working set ('4GB'; 1/8 of it buffers output rows); ``output`` streams
    rows to a Parquet dataset partitioned by trait (with ``pvalue_threshold``, only the rows
    with p <= it, in one file per flush); ``top`` hits per trait are kept; ``h2_method``
    "reml" (FaST-LMM's objective) or "ml"; ``backend`` "cpu", "gpu" (CuPy) or "dask" (SNP
    blocks as tasks on a LocalCluster of ``n_workers``, or on ``scheduler``: an address or a
    Client).
    A trait with missing values is tested on the individuals who have it (FaST-LMM's
    single-trait behaviour; one kinship and eigendecomposition per missingness pattern,
    ``missing``); ``summary.n`` counts each trait's individuals.
    ``progress(done, total)`` is called with the SNP blocks done (0 first, then after each
    block of every kinship; per missingness pattern); a set ``cancel`` (a threading.Event) stops the scan between
    blocks with ``engine.Cancelled``.
    """
    clock = {"start": time.perf_counter()}
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: choose from {BACKENDS}.")
    if h2_method not in heritability.METHODS:
        raise ValueError(f"h2_method={h2_method!r}: choose from {heritability.METHODS}.")
    genotypes = Genotypes.open(bed, count_A1=count_A1)
    selected = _snp_positions(genotypes, snps)
    if selected.size == 0:
        raise CohortError("snps selects no SNP: there is nothing to test (and no lambda_GC); "
                          "select at least one SNP.")
    tested = genotypes.select(selected)
    traits = read_table(pheno, "pheno")
    check_values(traits, "pheno")
    by_pattern = missing.patterns(traits)
    if len(by_pattern) > 1:                      # traits with different missing individuals
        if output is not None:
            raise CohortError("pheno: traits are missing for different individuals; scan "
                              "them in memory (output=None) or one missingness pattern at a "
                              "time.")
        names = [str(c) for c in traits.columns]
        results = [scan(bed, traits.loc[ids, columns], covar, kinship, snps, count_A1,
                        backend, memory, h2_method=h2_method,
                        pvalue_threshold=pvalue_threshold, top=top, scheduler=scheduler,
                        n_workers=n_workers, progress=progress, cancel=cancel)
                   for columns, ids in by_pattern]
        return GwasResult(**missing.combine(results, names))
    traits = traits.loc[by_pattern[0][1]]        # individuals missing every trait: dropped
    covariates = None if covar is None else read_table(covar, "covar")
    if covariates is not None:
        check_values(covariates, "covar")
    rows, Y, C = match(genotypes.ids(), traits, covariates)
    tested = tested.keep(rows)
    X = np.column_stack([C, np.ones(len(rows))])
    complement = covariate_complement(X)
    dof = complement.shape[1] - 1
    names = [str(c) for c in traits.columns]
    budget = blocks.parse_memory(memory)
    m_block, t_block = blocks.block_sizes(budget - budget // 8, len(rows), tested.m,
                                          len(names))
    groups = _kinship_groups(kinship, tested, genotypes, rows)
    snp_table = _snp_table(tested)
    sink = FrameSink(names, snp_table, pvalue_threshold) if output is None else \
        ParquetSink(output, names, snp_table, pvalue_threshold, buffer_bytes=budget // 8)
    summaries = Summaries(names, top=top, threshold=pvalue_threshold)
    h2_cols, s2_cols = {}, {}
    clock["prepare"] = time.perf_counter()
    null_s = 0.0
    done, total = 0, sum(-(-len(positions) // m_block) for _, positions, _ in groups)
    step = _Steps(progress, cancel, total)
    step(done)
    with _backend(backend, scheduler, n_workers, summaries) as run:
        for label, positions, K in groups:
            step(done)
            null_start = time.perf_counter()
            basis, UY, h2, sigma2 = _null_model(K, complement, X, Y, h2_method, backend)
            null_s += time.perf_counter() - null_start
            h2_cols[label], s2_cols[label] = h2, sigma2
            problem = _Problem(tested.select(positions), basis, UY, h2, dof, t_block)
            for start, *block in run(problem, m_block, sink.target(positions)):
                if len(block) == 1:             # the GPU's hits and top-list candidates
                    hits = block[0]
                    snp_rows = positions[start:start + hits.m]
                    summaries.add_hits(hits, snp_rows)
                    sink.write_hits(snp_rows, h2, hits)
                else:
                    beta, se, p = block
                    snp_rows = positions[start:start + beta.shape[1]]
                    summaries.add(p, beta, se, snp_rows)
                    sink.write(snp_rows, h2, p, beta, se)
                done += 1
                step(done)
    clock["scan"] = time.perf_counter()
    h2_frame = pd.DataFrame(h2_cols, index=pd.Index(names, name="Pheno"))
    result = GwasResult(
        h2=h2_frame, sigma2=pd.DataFrame(s2_cols, index=h2_frame.index),
        summary=summaries.table(h2_frame).assign(n=len(rows)), top_hits=summaries.top_hits(snp_table),
        individuals=genotypes.ids()[rows], output=None if output is None else Path(output),
        spec={"bed": str(genotypes.path), "kinship": kinship if isinstance(kinship, str)
              else "array", "count_A1": count_A1, "backend": backend, "memory": budget,
              "h2_method": h2_method, "pvalue_threshold": pvalue_threshold,
              "block": (m_block, t_block), "n": len(rows), "m": tested.m, "t": len(names),
              "dof": dof, "covariates": C.shape[1]},
        _frame=sink.frame() if output is None else None)
    sink.close(result)
    clock["write"] = time.perf_counter()
    result.timings = {"prepare": clock["prepare"] - clock["start"], "null_model": null_s,
                      "scan": clock["scan"] - clock["prepare"] - null_s,
                      "write": clock["write"] - clock["scan"]}
    return result


class _Steps:
    """Report blocks done to ``progress`` and stop with Cancelled once ``cancel`` is set."""

    def __init__(self, progress, cancel, total):
        self.progress, self.cancel, self.total = progress, cancel, total

    def __call__(self, done):
        if self.progress is not None:
            self.progress(done, self.total)
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"GWAS scan cancelled after {done} of {self.total} SNP blocks")


def _null_model(K, complement, X, Y, h2_method, backend):
    """The kinship's eigenbasis (Algorithm 5 line 2), the rotated traits (line 5) and every
    trait's h2 and sigma2 under the null model (on the GPU with backend "gpu")."""
    K = scale_to_n(K() if callable(K) else K)
    basis = Eigenbasis.of(K, complement)
    xp = np
    if backend == "gpu":
        import cupy as xp
    UY = xp.asarray(basis.U.T) @ xp.asarray(Y)
    if h2_method == "ml":
        h2, sigma2 = heritability.estimate(basis.S, UY, len(Y), heritability.MlTerms(K, X), xp)
    else:
        h2, sigma2 = heritability.estimate(basis.S, UY, complement.shape[1], xp=xp)
    return basis, (UY if xp is np else UY.get()), h2, sigma2


@dataclass
class _Problem:
    """What every SNP block of one kinship needs (picklable: a Dask task carries it)."""

    genotypes: Genotypes
    basis: Eigenbasis
    UY: np.ndarray
    h2: np.ndarray
    dof: int
    t_block: int

    def weights(self, xp):
        """W = 1 / d_j (n' x t), Y' o W, y'Ky (t,), formed on the backend's device."""
        S, h2, UY = (xp.asarray(a) for a in (self.basis.S, self.h2, self.UY))
        W = 1.0 / (S[:, None] * h2[None, :] + (1.0 - h2[None, :]))
        YW = UY * W
        return W, YW, (UY * YW).sum(axis=0)

    def cpu_device(self):
        """What ``compute`` needs on the CPU: U^T, W's factors (``gls.weight_factors``, whose
        small QRs run 5-30x faster on one BLAS thread here), Y' o W and y'Ky."""
        W, YW, yKy = self.weights(np)
        with threadpool_limits(1, user_api="blas"):
            B, T = gls.weight_factors(W)
        return np.ascontiguousarray(self.basis.U.T), B, T, YW, yKy

    def compute(self, G, device, out=None):
        """beta, SE and p (each t x m_b, trait-major; written into ``out`` when given) of a
        standardised genotype block G (n x m_b).

        Every step of a SNP is its own column's (rotation, the two GEMMs, the fused pass), so
        the block's SNPs go in parts to the cores' threads (``parts``), each calling a BLAS of
        one thread: no BLAS thread spins, after its GEMM, on a core another part's pass needs
        (that made the pass 2-3x slower on two cores)."""
        t, m_b = device[2].shape[1], G.shape[1]          # T (or W): one column per trait
        beta, se, p = out or (np.empty((t, m_b)) for _ in range(3))
        with threadpool_limits(1, user_api="blas"):
            parts.run(self._columns, m_b, lambda snps: (
                G[:, snps], device, beta[:, snps], se[:, snps], p[:, snps]))
        return beta, se, p

    def _columns(self, G, device, beta, se, p):
        """``compute`` for the SNPs of G, in tiles of (traits, SNPs) that keep the GEMM outputs
        in cache, each tile's last step one fused pass (``gls_kernels.finish``)."""
        UT, B, T, YW, yKy = device
        X, X2 = gls.rotate(UT, G, np)
        P = X2 if B is None else B.T @ X2                 # sKs = T^T P: (X' o X')^T W
        m_b, t = G.shape[1], T.shape[1]
        m_tile, t_tile = _TILE_SNPS, min(self.t_block, _TILE_TRAITS)
        table = gls.pass_table(int(self.dof))
        tiles = np.empty((2, min(t, t_tile) * min(m_b, m_tile)))    # the GEMM outputs, reused
        for j in range(0, t, t_tile):
            traits = slice(j, j + t_tile)
            for i in range(0, m_b, m_tile):
                snps = slice(i, i + m_tile)
                shape = (len(range(t)[traits]), len(range(m_b)[snps]))
                sKs, sKy = (a[:shape[0] * shape[1]].reshape(shape) for a in tiles)
                np.matmul(T[:, traits].T, P[:, snps], out=sKs)
                np.matmul(YW[:, traits].T, X[:, snps], out=sKy)
                outputs = beta[traits, snps], se[traits, snps], p[traits, snps]
                if gls_kernels.finish(sKs, sKy, yKy[traits], float(self.dof), *table, *outputs):
                    gls.p_value_beyond(*outputs, self.dof)

    def __call__(self, start_stop):
        """A Dask task: read, standardise and test SNPs start:stop (NumPy on the worker)."""
        start, stop = start_stop
        return (start, *self.compute(self.genotypes.read(start, stop), self.cpu_device()))


@contextlib.contextmanager
def _backend(backend, scheduler, n_workers, summaries):
    """Yield ``run(problem, m_block, out)``: a generator of (start, beta, se, p) per SNP
    block, written into ``out(start, stop)``'s arrays where it gives them (``FrameSink``);
    the GPU's, with a p-value threshold, of (start, ``gpu.Hits``)."""
    if backend == "dask":
        from .distributed import DaskBlocks

        with DaskBlocks(scheduler, n_workers) as run:
            yield run
        return
    if backend == "gpu":
        from . import gpu

        yield functools.partial(gpu.run, summaries=summaries if summaries.threshold is not None
                                else None)
        return

    def run(problem, m_block, out=None):
        device = problem.cpu_device()
        starts = range(0, problem.genotypes.m, m_block)
        for start, G in blocks.prefetched(problem.genotypes.read, starts, m_block):
            views = None if out is None else out(start, start + G.shape[1])
            yield (start, *problem.compute(G, device, views))

    yield run


def _kinship_groups(kinship, tested: Genotypes, genotypes: Genotypes, rows):
    """[(label, tested SNP positions, K or a K builder)] for each kinship of the scan."""
    everything = np.arange(tested.m)
    if isinstance(kinship, np.ndarray):
        n = len(rows)
        K = np.asarray(kinship, dtype=float)
        if K.shape == (len(genotypes.iid), len(genotypes.iid)) and K.shape != (n, n):
            K = K[np.ix_(rows, rows)]
        if K.shape != (n, n) or not np.allclose(K, K.T):
            raise CohortError(f"kinship: expected a symmetric {n} x {n} array (the analysed "
                              f"individuals in .fam order), got shape {K.shape}.")
        return [("all", everything, K)]
    if kinship == "all":
        return [("all", everything, lambda: gram(tested))]
    if kinship == "loco":
        chroms = pd.unique(tested.chrom)
        if len(chroms) < 2:
            raise CohortError(f"kinship='loco': the tested SNPs are all on chromosome "
                              f"{chroms[0]}; LOCO needs two or more; use kinship='all'.")
        total = {}

        def loco(c):
            def build():
                if "K" not in total:
                    total["K"] = gram(tested)
                return total["K"] - gram(tested.select(tested.chrom == c))
            return build
        return [(_chrom_label(c), np.flatnonzero(tested.chrom == c), loco(c)) for c in chroms]
    if isinstance(kinship, (str, Path)) and (Path(f"{kinship}.bed").exists()
                                             or str(kinship).endswith(".bed")):
        other = Genotypes.open(kinship, count_A1=tested.count_A1)
        position = pd.Series(np.arange(len(other.iid)), index=other.ids())
        ids = genotypes.ids()[rows]
        missing = ids.difference(position.index, sort=False)
        if len(missing):
            raise CohortError(f"kinship: {len(missing)} analysed individuals are not in "
                              f"{other.path.with_suffix('.fam')}, e.g. {list(missing[:5])}.")
        other = other.keep(position[ids].to_numpy())
        return [("all", everything, lambda: gram(other))]
    raise ValueError(f"kinship={kinship!r}: use 'loco', 'all', an n x n array or the prefix of "
                     "an existing PLINK fileset.")


def _chrom_label(c):
    try:
        return int(c)
    except ValueError:
        return str(c)


def _snp_positions(genotypes: Genotypes, snps) -> np.ndarray:
    """Positions of the tested SNPs among the .bim rows: all, a slice, ints, a mask or ids."""
    everything = np.arange(genotypes.m)
    if snps is None:
        return everything
    if isinstance(snps, slice):
        return everything[snps]
    snps = np.asarray(snps)
    if snps.dtype.kind == "b":
        if snps.shape != (genotypes.m,):
            raise CohortError(f"snps: a boolean mask needs {genotypes.m} values, one per SNP.")
        return everything[snps]
    if snps.dtype.kind in "iu":
        if snps.size and (snps.min() < 0 or snps.max() >= genotypes.m):
            raise CohortError(f"snps: positions must lie in 0..{genotypes.m - 1}.")
        return snps
    lookup = pd.Series(everything, index=genotypes.sid)
    unknown = [s for s in snps if s not in lookup.index]
    if unknown:
        raise CohortError(f"snps: {unknown[:5]} are not in {genotypes.path.with_suffix('.bim')}.")
    return lookup[snps].to_numpy()


def _snp_table(tested: Genotypes) -> pd.DataFrame:
    """sid_index, SNP (categorical), Chr, ChrPos of the tested SNPs (Chr numeric when it can
    be)."""
    chrom = pd.to_numeric(pd.Series(tested.chrom), errors="coerce")
    chrom = chrom if not chrom.isna().any() else pd.Series(tested.chrom)
    index = np.arange(tested.m, dtype=np.int32 if tested.m < 2**31 else np.int64)  # exact
    return pd.DataFrame({"sid_index": index, "SNP": snp_ids(tested.sid),
                         "Chr": chrom.to_numpy(), "ChrPos": tested.pos.astype(float)})
