"""Sweeps: one simulated problem per value of N or of K strata, every tool on each, one report.

Reproduces the papers' (Yang2022, Yang2024) experiments on this machine: Yang2022 Fig. 4 (L1 Cox at a fixed penalty,
N = 10^4 ... 10^6, P = 1,000; with ``--over n`` this is also the log-log scaling chart), Yang2024
Fig. 2 (stratified Cox, K = 1 ... N/2 strata) and the papers' exact CCD against survscan's
default solver (the ``survscan-ccd`` tool).  Ratios follow bench.report's equal-accuracy rule.
"""
import json
from pathlib import Path

from bench.adapters import run_tool
from bench.problems import make_problem
from bench.report import machine_info, matplotlib_charts, summarise


def run(over, values, n, p, density, penalty, ratio, seed, tools, options, out):
    """Fit every tool on the problem of each value; write JSON, Markdown and a PNG chart."""
    # JIT warm-up at the same P, stratified only when strata are swept (peers skip strata)
    warmup = make_problem(500, p, density, 2 if over == "strata" else 1, penalty, 0.5, seed)
    for tool in tools:
        run_tool(tool, warmup, **options)
    records = []
    for value in values:
        size = {"n": value if over == "n" else n,
                "n_strata": value if over == "strata" else 1}
        print(f"{over} = {value:,}: simulating ...", flush=True)
        problem = make_problem(size["n"], p, density, size["n_strata"], penalty, ratio, seed)
        runs = []
        for tool in tools:
            print(f"  fitting {tool} ...", flush=True)
            r = run_tool(tool, problem, **options)
            print(f"    {r.status} {r.reason} "
                  + ("" if r.wall_s is None else f"{r.wall_s:.3f} s"), flush=True)
            runs.append(r)
        record = summarise(problem, runs, options)
        for t in record["tools"]:
            t.pop("coef")
        records.append({"value": value, **record})
    name = f"sweep_{over}_p{p}_{penalty}_r{ratio}" + (f"_n{n}" if over == "strata" else "")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"over": over, "values": values, "machine": machine_info(), "records": records}
    (folder / f"{name}.json").write_text(json.dumps(summary, indent=1, default=float))
    text = markdown(over, records)
    (folder / f"{name}.md").write_text(text)
    chart(over, records, folder / f"{name}.png")
    print(text)
    print(f"wrote {folder / name}.json, .md and .png")
    return summary


def markdown(over, records):
    """One row per value: each tool's time, and its ratio to survscan where accuracy agrees."""
    tools = [t["tool"] for t in records[0]["tools"]]
    columns = [over] + [f"{t} (s)" for t in tools] + [f"{t} / survscan" for t in tools[1:]]
    lines = [f"# Sweep over {over}: P = {records[0]['problem']['p']:,}, "
             f"penalty {records[0]['problem']['penalty']} at {records[0]['problem']['ratio']} "
             "x lambda_max", "", "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    for rec in records:
        times = [f"{t['wall_s']:.3f}" if t["status"] == "ok" else t["status"]
                 for t in rec["tools"]]
        ratios = [f"{t['ratio']:.1f}" if t.get("ratio") else
                  ("-" if t["status"] != "ok" else "accuracy differs")
                  for t in rec["tools"][1:]]
        lines.append("| " + " | ".join([f"{rec['value']:,}", *times, *ratios]) + " |")
    skipped = {(t["tool"], t["reason"]) for rec in records for t in rec["tools"]
               if t["status"] != "ok"}
    lines += ["", *[f"- {tool}: {reason}" for tool, reason in sorted(skipped)]]
    return "\n".join(lines) + "\n"


def chart(over, records, path):
    """Time against the swept value on log-log axes, one line per tool (HoloViews, matplotlib)."""
    with matplotlib_charts() as hv:
        curves = []
        for tool in [t["tool"] for t in records[0]["tools"]]:
            pts = [(rec["value"], t["wall_s"]) for rec in records for t in rec["tools"]
                   if t["tool"] == tool and t["status"] == "ok"]
            if pts:
                curves.append(hv.Curve(pts, over, "seconds", label=tool)
                              * hv.Scatter(pts, over, "seconds", label=tool))
        overlay = hv.Overlay(curves).opts(logx=True, logy=True, fig_size=150,
                                          legend_position="top_left", title=f"fit time vs {over}")
        hv.save(overlay, str(path), fmt="png")
