"""python -m bench gwas [--sizes M:T,...] [--fastlmm-max-t 1000] [--naive 40:2] [--repeats 3]
[--fig6 M]

Multi-trait GWAS (FabregatTraver2014): survscan's ``gwas.scan`` against FaST-LMM ``single_snp`` (one
call with every trait, as FaST-LMM's multi-phenotype mode) and against a naive per-(SNP, trait)
Cholesky GLS, on the bundled toydata genotypes (500 people) tiled to m SNPs, with t traits from
``gwas.simulate_traits``, kinship = all tested SNPs for both tools (``--kinship loco``: leave
one chromosome out, FaST-LMM's default, for both); survscan's time is the
fastest of ``--repeats`` runs (the scan and its full output frame), FaST-LMM runs once (its
single-trait call is timed once and scaled by t for the paper's trait-by-trait comparison);
wall and CPU seconds (``time.process_time``: all threads of the process, robust to other jobs
on a loaded machine) are both reported.  A speed ratio is printed
only where the two tools' p-values agree (max |log10 p| difference below 1e-3).  The naive GLS
is timed on a few problems and extrapolated to m x t (labelled so).

--fig6 M runs the paper's Fig. 6 shape (n = 1,000, p = 4: intercept, 2 covariates and the
SNP; t = 10,000 traits) on M SNPs of simulated genotypes, streaming hits (p <= 1e-6) and
per-trait summaries to Parquet under a 4 GB budget, and extrapolates linearly to m = 10^5 when
M < 10^5.  
--largest M:T runs the paper's largest problem (n = 1,000, m = 10^6, t = 10^5) or a slice of it
with ``--backend`` (gpu on a device), hits and summaries streamed to Parquet, and extrapolates
to m = 10^6 (bench/gwas_largest.py).  Results: bench/results/gwas*.json and .md.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench import gwas_largest
from bench.report import machine_info
from engine import gwas

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "sample_data" / "gwas" / "toydata" / "toydata.5chrom"
TMP = ROOT / "bench" / "results" / "tmp" / "gwas"


def tiled_bed(m: int) -> Path:
    """The toydata genotypes (500 x 10,000) tiled along SNPs to m SNPs, written once."""
    from bed_reader import open_bed, to_bed

    if m <= 10_000:
        return TOY
    path = TMP / f"toydata_m{m}.bed"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open_bed(f"{TOY}.bed", count_A1=False) as b:
            values = b.read(dtype="int8")
            iid, fid = b.iid, b.fid
        reps = -(-m // values.shape[1])
        tiled = np.ascontiguousarray(np.tile(values, reps)[:, :m])
        to_bed(path, tiled, count_A1=False, properties={
            "fid": fid, "iid": iid, "sid": [f"snp{j}" for j in range(m)],
            "chromosome": [str(1 + 5 * j // m) for j in range(m)],
            "bp_position": np.arange(m) + 1})
    return path.with_suffix("")


def run_survscan(bed, pheno, m, kinship="all"):
    """(wall s, CPU s of the process, result): the scan and its full output frame."""
    start, cpu = time.perf_counter(), time.process_time()
    res = gwas.scan(bed=bed, pheno=pheno, kinship=kinship, snps=slice(0, m))
    res.frame
    return time.perf_counter() - start, time.process_time() - cpu, res


def run_fastlmm(bed, pheno, m, kinship="all"):
    from fastlmm.association import single_snp
    from pysnptools.snpreader import Bed, SnpData

    iid = pheno[["FID", "IID"]].to_numpy(dtype=str)
    traits = [c for c in pheno.columns if c not in ("FID", "IID")]
    data = SnpData(iid=iid, sid=traits, val=pheno[traits].to_numpy())
    snps = Bed(str(bed) + ".bed", count_A1=False)[:, :m]
    start, cpu = time.perf_counter(), time.process_time()
    frame = single_snp(snps, data, leave_out_one_chrom=kinship == "loco", count_A1=False)
    return time.perf_counter() - start, time.process_time() - cpu, frame


def agreement(ours: pd.DataFrame, theirs: pd.DataFrame) -> dict:
    if "Pheno" not in theirs:
        theirs = theirs.assign(Pheno=ours.Pheno.iloc[0])
    both = ours.assign(Pheno=ours.Pheno.astype(str)).merge(
        theirs[["Pheno", "SNP", "PValue", "Nullh2"]], on=["Pheno", "SNP"],
        suffixes=("", "_fastlmm"))
    dlog = np.abs(np.log10(both.PValue) - np.log10(both.PValue_fastlmm))
    return {"rows": int(len(both)), "max_abs_log10_p_diff": float(dlog.max()),
            "max_abs_p_diff": float(np.abs(both.PValue - both.PValue_fastlmm).max()),
            "max_abs_h2_diff": float(np.abs(both.Nullh2 - both.Nullh2_fastlmm).max())}


def naive_seconds_per_problem(bed, pheno, snps: int, traits: int) -> float:
    """Time of one dense GLS (Cholesky of V, whitening, least squares) per (SNP, trait)."""
    from scipy import linalg

    g = gwas.Genotypes.open(bed)
    G = g.read(0, snps)
    K = gwas_kinship(g)
    n = G.shape[0]
    start = time.perf_counter()
    for j in range(traits):
        y = pheno.iloc[:, 2 + j].to_numpy()
        for i in range(snps):
            L = np.linalg.cholesky(0.5 * K + 0.5 * np.eye(n))      # M_j (h2 fixed at 0.5)
            X = linalg.solve_triangular(L, np.column_stack([np.ones(n), G[:, i]]), lower=True)
            yw = linalg.solve_triangular(L, y, lower=True)
            np.linalg.lstsq(X, yw, rcond=None)
    return (time.perf_counter() - start) / (snps * traits)


def gwas_kinship(g):
    G = g.read()
    K = G @ G.T
    return K * (K.shape[0] / np.trace(K))


def sizes_run(sizes, fastlmm_max_t, naive, repeats=1, kinship="all"):
    rows = []
    naive_s = one_trait_s = None
    warm = gwas.simulate_traits(TOY, t=2, seed=99)         # imports and first calls, untimed
    run_survscan(TOY, warm, 10_000, kinship)              # every chromosome: LOCO needs two
    try:
        run_fastlmm(TOY, warm, 10_000, kinship)
    except ImportError:
        pass
    for m, t in sizes:
        bed = tiled_bed(m)
        pheno = gwas.simulate_traits(bed, t=t, h2=0.5, causal=10, seed=t)
        print(f"m={m:,} t={t:,}: survscan ...", flush=True)
        ours_s, ours_cpu, res = min((run_survscan(bed, pheno, m, kinship)
                                     for _ in range(repeats)),
                                    key=lambda run: run[0])
        row = {"n": 500, "m": m, "t": t, "tests": m * t, "survscan_s": round(ours_s, 3),
               "survscan_cpu_s": round(ours_cpu, 3)}
        if t <= fastlmm_max_t:
            try:
                print("  FaST-LMM single_snp ...", flush=True)
                theirs_s, theirs_cpu, frame = run_fastlmm(bed, pheno, m, kinship)
                row["fastlmm_s"] = round(theirs_s, 3)
                row["fastlmm_cpu_s"] = round(theirs_cpu, 3)
                row.update(agreement(res.frame, frame))
                if row["max_abs_log10_p_diff"] < 1e-3:
                    row["speedup_vs_fastlmm"] = round(theirs_s / ours_s, 1)
                    row["speedup_vs_fastlmm_cpu"] = round(theirs_cpu / ours_cpu, 1)
            except ImportError as exc:
                row["fastlmm"] = f"not installed ({exc})"
        if one_trait_s is None and t <= fastlmm_max_t:
            try:           # the paper's comparison: FaST-LMM called once per trait
                one_trait_s = run_fastlmm(bed, pheno.iloc[:, :3], m, kinship)[0]
            except ImportError:
                pass
        if one_trait_s is not None:
            row["fastlmm_trait_by_trait_s_extrapolated"] = round(one_trait_s * t, 1)
            row["speedup_vs_fastlmm_trait_by_trait"] = round(one_trait_s * t / ours_s, 1)
        if naive_s is None:
            naive_s = naive_seconds_per_problem(bed, pheno, *naive)
        row["naive_gls_s_extrapolated"] = round(naive_s * m * t, 1)
        row["speedup_vs_naive_extrapolated"] = round(naive_s * m * t / ours_s)
        print("  ", row, flush=True)
        rows.append(row)
    return {"naive_gls_s_per_problem": naive_s, "rows": rows}


def fig6_run(m_run: int, m_full: int = 100_000, n=1000, t=10_000, seed=0):
    """The paper's Fig. 6 shape on m_run simulated SNPs, streamed; linear extrapolation."""
    from bed_reader import to_bed

    rng = np.random.default_rng(seed)
    path = TMP / f"fig6_n{n}_m{m_run}.bed"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        freq = rng.uniform(0.05, 0.5, m_run)
        values = rng.binomial(2, freq, size=(n, m_run)).astype(np.int8)
        to_bed(path, values, count_A1=False, properties={
            "sid": [f"snp{j}" for j in range(m_run)],
            "chromosome": [str(1 + 10 * j // m_run) for j in range(m_run)]})
    bed = path.with_suffix("")
    pheno = gwas.simulate_traits(bed, t=t, h2=0.5, causal=20, seed=seed)
    covar = pheno[["FID", "IID"]].assign(c1=rng.normal(size=n), c2=rng.normal(size=n))
    out = TMP / "fig6_output"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    res = gwas.scan(bed=bed, pheno=pheno, covar=covar, kinship="all", memory="4GB",
                    output=out, pvalue_threshold=1e-6)
    wall = time.perf_counter() - start
    scan_s = res.timings["scan"]
    return {"n": n, "p": 4, "m_run": m_run, "t": t, "wall_s": round(wall, 1),
            "timings": {k: round(v, 2) for k, v in res.timings.items()},
            "block": res.spec["block"],
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "hits_written": int(res.summary.hits.sum()),
            "median_lambda_gc": round(float(res.summary.lambda_gc.median()), 4),
            "m_full": m_full,
            "wall_s_extrapolated_to_m_full": round(wall + scan_s * (m_full / m_run - 1), 1)}


def _g(x):
    return "-" if x is None else f"{x:.1e}"


def write(record, name, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2, default=str))
    lines = [f"# {record['title']}", "", f"kinship: {record.get('kinship', 'all')}", ""]
    if "rows" in record.get("sizes", {}):
        lines += ["| m | t | survscan (s) | FaST-LMM, all traits in one call (s) | speed-up | "
                  "survscan CPU (s) | FaST-LMM CPU (s) | CPU speed-up | "
                  "max abs log10 p diff | max abs h2 diff | FaST-LMM trait by trait (s, "
                  "extrapolated) | speed-up | naive GLS (s, extrapolated) | speed-up |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in record["sizes"]["rows"]:
            lines.append(f"| {r['m']:,} | {r['t']:,} | {r['survscan_s']} | "
                         f"{r.get('fastlmm_s', '-')} | {r.get('speedup_vs_fastlmm', '-')} | "
                         f"{r['survscan_cpu_s']} | {r.get('fastlmm_cpu_s', '-')} | "
                         f"{r.get('speedup_vs_fastlmm_cpu', '-')} | "
                         f"{_g(r.get('max_abs_log10_p_diff'))} | {_g(r.get('max_abs_h2_diff'))} | "
                         f"{r.get('fastlmm_trait_by_trait_s_extrapolated', '-')} | "
                         f"{r.get('speedup_vs_fastlmm_trait_by_trait', '-')} | "
                         f"{r['naive_gls_s_extrapolated']:,} | "
                         f"{r['speedup_vs_naive_extrapolated']:,} |")
    if "largest" in record:
        lines += gwas_largest.markdown(record["largest"])
    if "fig6" in record:
        f = record["fig6"]
        lines += ["", f"Fig. 6 shape: n={f['n']:,}, p={f['p']}, t={f['t']:,}, run on "
                  f"m={f['m_run']:,} SNPs: {f['wall_s']} s ({f['timings']}), blocks "
                  f"{f['block']}, peak RSS {f['peak_rss_gb']} GB, {f['hits_written']} hits "
                  f"(p <= 1e-6) written; extrapolated to m={f['m_full']:,}: "
                  f"{f['wall_s_extrapolated_to_m_full']} s."]
    m = record["machine"]
    lines += ["", f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
              f"{m['load_average_1_5_15min']} (1, 5, 15 min) at the end; BLAS kernels "
              f"{[lib['architecture'] for lib in m['blas']['libraries']]}."]
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    return out / f"{name}.json", out / f"{name}.md"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench gwas", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000:10,10000:100,10000:1000",
                        help="comma-separated M:T pairs (SNPs:traits), n = 500")
    parser.add_argument("--fastlmm-max-t", type=int, default=1000,
                        help="run FaST-LMM only up to this many traits")
    parser.add_argument("--naive", default="40:2", help="SNPs:traits timed for the naive GLS")
    parser.add_argument("--repeats", type=int, default=3,
                        help="survscan runs per size, the fastest kept (FaST-LMM runs once)")
    parser.add_argument("--fig6", type=int, default=0,
                        help="run the Fig. 6 shape on this many SNPs (0: skip)")
    parser.add_argument("--largest", default="",
                        help="M:T: the largest problem's shape on M SNPs and T traits (n = 1,000)")
    parser.add_argument("--backend", default="gpu", choices=gwas.BACKENDS,
                        help="backend of --largest")
    parser.add_argument("--threshold", type=float, default=1e-6,
                        help="p-value threshold of the hits --largest writes")
    parser.add_argument("--memory", default="24GB", help="memory budget of --largest")
    parser.add_argument("--kinship", default="all", choices=("all", "loco"),
                        help="kinship of the --sizes runs, the same for both tools")
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--name", default="gwas")
    args = parser.parse_args(argv)
    record = {"title": "Multi-trait GWAS: survscan gwas.scan vs FaST-LMM single_snp and a naive "
                       "per-problem GLS (n = 500 toydata people)" if args.sizes else
              "Multi-trait GWAS: the largest problem of FabregatTraver2014 (n = 1,000)",
              "repeats": args.repeats, "kinship": args.kinship}
    if args.sizes:
        sizes = [tuple(int(float(v)) for v in s.split(":")) for s in args.sizes.split(",")]
        naive = tuple(int(v) for v in args.naive.split(":"))
        record["sizes"] = sizes_run(sizes, args.fastlmm_max_t, naive, args.repeats,
                                    args.kinship)
    if args.largest:
        m, t = (int(float(v)) for v in args.largest.split(":"))
        print(f"largest problem slice: m={m:,} t={t:,} on {args.backend} ...", flush=True)
        record["largest"] = gwas_largest.run(m, t, args.backend, args.threshold, args.memory)
        print("  ", record["largest"], flush=True)
    if args.fig6:
        print(f"Fig. 6 shape on {args.fig6:,} SNPs ...", flush=True)
        record["fig6"] = fig6_run(args.fig6)
        print("  ", record["fig6"], flush=True)
    record["machine"] = machine_info()
    paths = write(record, args.name, args.out)
    print((paths[1]).read_text())
    return record
