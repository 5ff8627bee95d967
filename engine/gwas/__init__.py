"""Multi-trait genome-wide association (FabregatTraver2014: Fabregat-Traver & Bientinesi, "Computing
petaflops over terabytes of data: the case of genome-wide association studies", 2014).

``from engine import gwas``: ``gwas.scan`` tests every SNP of a PLINK fileset against every
trait under a linear mixed model, with FaST-LMM ``single_snp``'s numbers, FabregatTraver2014's Algorithm 5
laid out as matrix-matrix products, genotype blocks prefetched from disk and results streamed to
Parquet; ``gwas.simulate_traits`` makes traits of known heritability on real genotypes.
Not imported by ``import engine``.
"""
from .genotypes import Genotypes
from .phenotypes import read_table
from .scan import BACKENDS, KINSHIPS, GwasResult, scan
from .simulate import simulate_traits
from .sumstats import summary_statistics

__all__ = ["BACKENDS", "Genotypes", "GwasResult", "KINSHIPS", "read_table", "scan",
           "simulate_traits", "summary_statistics"]
