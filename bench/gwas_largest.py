"""The paper's largest problem (FabregatTraver2014: n = 1,000 people, m = 10^6 SNPs, t = 10^5
traits; target on an H100: under 15 minutes), or a slice of it (m SNPs, t traits) with a linear
extrapolation in m.

Genotypes are the bundled toydata (500 people x 10,000 SNPs) made into 1,000 people (the second
500 are the same people with their SNPs shifted by 5,000 positions, so nobody is duplicated)
and tiled along SNPs to m (5 chromosomes); t traits from ``gwas.simulate_traits`` on the first
10,000 SNPs (h2 = 0.05 over 10 causal SNPs each, so that hits stay rare).  The scan (kinship
"all") streams hits (p <= threshold) and per-trait summaries to Parquet, never the m x t rows (where
pyarrow is missing, as it may be on a device image, the hits stay in memory instead).
Reported: the scan's timings, every SNP block's time (from the progress callback), hits
written, peak host memory and, when m < m_full, wall seconds extrapolated to m_full (the
null model and the first block once, the other blocks' median time per SNP times m_full).
"""
from __future__ import annotations

import importlib.util
import resource
import shutil
import time
from pathlib import Path

import numpy as np

from engine import gwas

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "sample_data" / "gwas" / "toydata" / "toydata.5chrom"
TMP = ROOT / "bench" / "results" / "tmp" / "gwas"
N = 1000


def genotypes(m: int) -> Path:
    """1,000 people x m SNPs tiled from the toydata, written once under bench/results/tmp."""
    from bed_reader import open_bed, to_bed

    path = TMP / f"largest_n{N}_m{m}.bed"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_bed(f"{TOY}.bed", count_A1=False) as b:
            values = b.read(dtype="int8")
        people = np.vstack([values, np.roll(values, 5_000, axis=1)])
        reps = -(-m // people.shape[1])
        tiled = np.ascontiguousarray(np.tile(people, reps)[:, :m])
        to_bed(path, tiled, count_A1=False, properties={
            "fid": [f"f{i}" for i in range(N)], "iid": [f"i{i}" for i in range(N)],
            "sid": [f"snp{j}" for j in range(m)],
            "chromosome": [str(1 + 5 * j // m) for j in range(m)],
            "bp_position": np.arange(m) + 1})
    return path.with_suffix("")


def run(m: int, t: int, backend: str = "gpu", threshold: float = 1e-6, memory: str = "24GB",
        m_full: int = 1_000_000, seed: int = 0) -> dict:
    bed = genotypes(m)
    started = time.perf_counter()
    base = gwas.Genotypes.open(bed).select(np.arange(min(m, 10_000)))
    pheno = gwas.simulate_traits(base, t=t, h2=0.05, causal=10, seed=seed)
    simulate_s = time.perf_counter() - started
    out = TMP / f"largest_{backend}_output"
    shutil.rmtree(out, ignore_errors=True)
    if importlib.util.find_spec("pyarrow") is None:       # a device image without pyarrow
        out = None
    stamps = []

    def progress(done, total):
        stamps.append(time.perf_counter())
        if done and (done % 50 == 0 or done == total):      # a rate even if the run is cut off
            print(f"  block {done}/{total}: {stamps[-1] - start:.1f} s", flush=True)

    start = time.perf_counter()
    res = gwas.scan(bed=bed, pheno=pheno, kinship="all", backend=backend, memory=memory,
                    output=out, pvalue_threshold=threshold, progress=progress)
    wall = time.perf_counter() - start
    blocks = np.diff(stamps[1:])        # stamps[1]: before the null model; then one per block
    if len(blocks):
        blocks[0] -= res.timings["null_model"]
    m_block = res.spec["block"][0]
    record = {"n": N, "m_run": m, "t": t, "backend": backend, "threshold": threshold,
              "memory": memory, "block": res.spec["block"], "blocks": len(blocks),
              "simulate_traits_s": round(simulate_s, 1), "wall_s": round(wall, 1),
              "timings": {k: round(v, 2) for k, v in res.timings.items()},
              "block_s": {"first": _r(blocks[:1]), "median": _r(np.median(blocks[1:]))
                          if len(blocks) > 1 else None, "max": _r(blocks.max())
                          if len(blocks) else None},
              "hits_written": int(res.summary.hits.sum()),
              "median_lambda_gc": round(float(res.summary.lambda_gc.median()), 4),
              "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
              "output_gb": None if out is None else round(
                  sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**30, 3),
              "m_full": m_full}
    if m < m_full and len(blocks) > 1:
        per_snp = float(np.median(blocks[1:])) / m_block
        rest = res.timings["scan"] - float(blocks.sum())
        record["wall_s_extrapolated_to_m_full"] = round(
            res.timings["prepare"] + res.timings["null_model"] + rest + float(blocks[0])
            + per_snp * (m_full - m_block) + res.timings["write"], 1)
    return record


def _r(x):
    x = np.asarray(x, dtype=float)
    return round(float(x.ravel()[0]), 3) if x.size else None


def markdown(r: dict) -> list[str]:
    what = "Largest problem" if r["m_run"] >= r["m_full"] else "Largest problem slice"
    line = (f"{what} ({r['backend']}): n={r['n']:,}, m={r['m_run']:,}, "
            f"t={r['t']:,}, hits p <= {r['threshold']:g} and summaries to Parquet: "
            f"{r['wall_s']} s ({r['timings']}), blocks {r['block']} x {r['blocks']} "
            f"(first {r['block_s']['first']} s, median {r['block_s']['median']} s), "
            f"{r['hits_written']:,} hits ({r['output_gb']} GB on disk), median lambda_GC "
            f"{r['median_lambda_gc']}, peak host RSS {r['peak_rss_gb']} GB; traits simulated "
            f"in {r['simulate_traits_s']} s (not counted)")
    if "wall_s_extrapolated_to_m_full" in r:
        line += (f"; extrapolated to m={r['m_full']:,}: {r['wall_s_extrapolated_to_m_full']} s"
                 " (linear in m)")
    return ["", line + "."]
