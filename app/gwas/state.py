"""The GWAS page's state: where genotypes, phenotypes and covariates come from, the scan's
settings, and the finished scan.  ``GwasState.job()`` snapshots the settings as a ``GwasJob``
whose ``run`` (any thread) calls ``engine.gwas``; its ``GwasRun`` holds the result and writes
the exports (summary statistics, spec, script).  No numerics here: the engine computes them.

Files come from the bundled toy data (sample_data/gwas/toydata, FaST-LMM's test files) or from
the operator's data directories (``loading.data_path``: never an arbitrary server path).
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import param

import engine
from engine import gwas

from ..data.loading import DataLoadError, data_path
from ..shell.caught_warnings import collected

TOY = Path(__file__).resolve().parents[2] / "sample_data" / "gwas" / "toydata"
SOURCES = ("bundled toy data", "data directory")
ROW_LIMIT = 1_000_000      # (trait, SNP) rows a page keeps in memory; beyond, only p <= threshold
MEMORY = "512MB"           # the scan's working-set budget (several SNP blocks: progress per block)


class GwasState(param.Parameterized):
    """What the GWAS page asks for, and its last finished scan."""

    source = param.Selector(objects=list(SOURCES), default=SOURCES[0])
    bed = param.String("", doc="PLINK prefix or .bed in the data directories")
    pheno = param.String("", doc="phenotype file in the data directories")
    covar = param.String("", doc="covariate file in the data directories (empty: none)")
    simulate = param.Boolean(False, doc="phenotypes from gwas.simulate_traits instead")
    sim_traits = param.Integer(1000, bounds=(1, 100_000))
    sim_h2 = param.Number(0.5, bounds=(0.0, 1.0))
    sim_causal = param.Integer(10, bounds=(1, None))
    seed = param.Integer(0)
    kinship = param.Selector(objects=list(gwas.KINSHIPS), default="loco")
    threshold = param.Number(None, allow_None=True, bounds=(0.0, 1.0),
                             doc="keep only rows with p <= threshold (None: every row)")
    traits = param.List([], doc="traits to scan (empty: all)")
    available = param.List([], doc="trait columns of the phenotypes")
    run = param.Parameter(None, doc="the last GwasRun")

    def files(self) -> dict:
        """Resolved paths: bed (prefix), pheno (None when simulated), covar (or None)."""
        if self.source == SOURCES[0]:
            return {"bed": TOY / "toydata.5chrom",
                    "pheno": None if self.simulate else TOY / "toydata.phe",
                    "covar": TOY / "toydata.cov"}
        if not self.bed.strip():
            raise DataLoadError("type the PLINK fileset (prefix or .bed) in the data directory")
        text = self.bed.strip()
        bed = data_path(text if text.endswith(".bed") else text + ".bed", "PLINK .bed file")
        if not self.simulate and not self.pheno.strip():
            raise DataLoadError("type the phenotype file, or tick 'Simulate traits'")
        pheno = None if self.simulate else data_path(self.pheno, "phenotype file")
        covar = data_path(self.covar, "covariate file") if self.covar.strip() else None
        return {"bed": bed.with_suffix(""), "pheno": pheno, "covar": covar}

    def load_traits(self) -> list[str]:
        """Read the phenotypes' trait names (DataLoadError with the reason); sets ``available``
        and keeps the chosen traits that still exist."""
        files = self.files()
        if files["pheno"] is None:
            names = [f"trait_{j}" for j in range(self.sim_traits)]
        else:
            try:
                names = [str(c) for c in gwas.read_table(files["pheno"], "pheno").columns]
            except engine.CohortError as exc:
                raise DataLoadError(str(exc)) from None
        self.available = names
        self.traits = [t for t in self.traits if t in names]
        return names

    def job(self) -> GwasJob:
        """A snapshot of the settings for a worker thread (DataLoadError: a message)."""
        files = self.files()
        settings = {"source": self.source, "kinship": self.kinship, "threshold": self.threshold,
                    "traits": list(self.traits), "memory": MEMORY,
                    **{k: str(v) if v is not None else None for k, v in files.items()}}
        if self.simulate:
            settings["simulate"] = {"t": self.sim_traits, "h2": self.sim_h2,
                                    "causal": self.sim_causal, "seed": self.seed}
        return GwasJob(settings)


def kept_threshold(tests: int, asked: float | None) -> float | None:
    """The threshold of rows kept: the one asked, lowered to a power of ten so that about
    ROW_LIMIT rows stay at most when ``tests`` = traits x SNPs is larger."""
    if tests <= ROW_LIMIT:
        return asked
    limit = 10.0 ** math.floor(math.log10(ROW_LIMIT / tests))
    return limit if asked is None else min(asked, limit)


@dataclass
class GwasJob:
    """The settings at the moment Run was pressed; ``run`` works in any thread."""

    settings: dict

    def phenotypes(self):
        s = self.settings
        if "simulate" in s:
            sim = s["simulate"]
            pheno = gwas.simulate_traits(s["bed"], t=sim["t"], h2=sim["h2"],
                                         causal=min(sim["causal"], 10_000), seed=sim["seed"])
        else:
            pheno = gwas.read_table(s["pheno"], "pheno").reset_index()
        if s["traits"]:
            unknown = [t for t in s["traits"] if t not in pheno.columns]
            if unknown:
                raise DataLoadError(f"traits {unknown[:5]} are not in the phenotypes; load them "
                                    "again")
            pheno = pheno[["FID", "IID", *s["traits"]]]
        return pheno

    def run(self, cancel: threading.Event | None = None, progress=None) -> GwasRun:
        """gwas.scan with progress per SNP block; engine.Cancelled when ``cancel`` is set."""
        t0 = time.perf_counter()
        s = dict(self.settings)
        with collected() as caught:
            pheno = self.phenotypes()
            m = len(gwas.Genotypes.open(s["bed"]).sid)
            t = pheno.shape[1] - 2
            s["threshold"] = kept_threshold(m * t, s["threshold"])
            res = gwas.scan(bed=s["bed"], pheno=pheno, covar=s["covar"], kinship=s["kinship"],
                            memory=s["memory"], pvalue_threshold=s["threshold"],
                            progress=progress, cancel=cancel)
        return GwasRun(res, s, time.perf_counter() - t0, list(dict.fromkeys(caught)))


@dataclass
class GwasRun:
    """A finished scan: the engine's result, the settings it ran with, and its exports."""

    result: object          # engine.gwas.GwasResult
    settings: dict
    elapsed: float
    warnings: list = field(default_factory=list)

    @property
    def traits(self) -> list[str]:
        return [str(t) for t in self.result.h2.index]

    def h2_table(self) -> pd.DataFrame:
        """Per trait: h2 (mean over LOCO kinships), tests, kept hits, min p, lambda_GC."""
        return self.result.summary.reset_index()

    def top_hits(self, rows: int = 200) -> pd.DataFrame:
        """The smallest p-values across traits (the engine's top hits per trait)."""
        return self.result.top_hits.sort_values("PValue", kind="stable").head(rows) \
            .reset_index(drop=True)

    def rows(self, trait: str) -> pd.DataFrame:
        frame = self.result.frame
        return frame[frame["Pheno"] == trait]

    def sumstats_csv(self) -> str:
        return gwas.summary_statistics(self.result).to_csv(index=False)

    def spec(self) -> dict:
        return {"survscan_gwas": 1, **self.settings}

    def spec_json(self) -> str:
        return json.dumps(self.spec(), indent=2)

    def python_script(self) -> str:
        return python_script(self.spec())


def python_script(spec: dict) -> str:
    """A script that reruns the scan of ``spec`` with the engine API and prints its results."""
    lines = ['"""Reproduce a survscan GWAS scan with the engine API (generated by the app)."""',
             "from engine import gwas", "", f"bed = {spec['bed']!r}"]
    if "simulate" in spec:
        sim = spec["simulate"]
        lines.append(f"pheno = gwas.simulate_traits(bed, t={sim['t']}, h2={sim['h2']!r}, "
                     f"causal={min(sim['causal'], 10_000)}, seed={sim['seed']})")
    else:
        lines.append(f"pheno = gwas.read_table({spec['pheno']!r}, 'pheno').reset_index()")
    if spec["traits"]:
        lines.append(f"pheno = pheno[['FID', 'IID', *{spec['traits']!r}]]")
    lines += [f"res = gwas.scan(bed=bed, pheno=pheno, covar={spec['covar']!r}, "
              f"kinship={spec['kinship']!r},",
              f"                memory={spec['memory']!r}, "
              f"pvalue_threshold={spec['threshold']!r})",
              "print(res.summary.to_string())",
              "print(res.top_hits.sort_values('PValue').head(20).to_string())",
              "gwas.summary_statistics(res).to_csv('gwas_sumstats.csv', index=False)"]
    return "\n".join(lines) + "\n"
