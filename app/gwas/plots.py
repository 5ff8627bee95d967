"""The GWAS page's plots (pure functions of a scan's rows): Manhattan, QQ and the trait x locus
heatmap of -log10 p.  Only display transforms here (-log10, positions along the genome, the
uniform quantiles of a QQ plot); every statistic comes from engine.gwas."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

COLORS = ("#2f4f6f", "#7fa7c9")
LOCUS_BINS = 10            # heatmap columns per chromosome


def minus_log10(p) -> np.ndarray:
    """-log10 p, a p that underflowed to 0 shown at the smallest positive double."""
    return -np.log10(np.maximum(np.asarray(p, dtype=float), np.finfo(float).tiny))


def genome_positions(rows: pd.DataFrame) -> tuple[np.ndarray, list]:
    """x of each row along the genome (chromosomes side by side in their order) and the
    chromosome label ticks."""
    chroms = pd.unique(rows["Chr"].sort_values(kind="stable"))
    span = rows.groupby("Chr")["ChrPos"].agg(["min", "max"]).loc[chroms]
    width = (span["max"] - span["min"]).to_numpy() + 1.0
    offset = pd.Series(np.concatenate([[0.0], np.cumsum(width)[:-1]]) - span["min"].to_numpy(),
                       index=chroms)
    x = rows["ChrPos"].to_numpy() + offset.loc[rows["Chr"]].to_numpy()
    ticks = [(float(offset[c] + span.loc[c, "min"] + w / 2), str(c)) for c, w in
             zip(chroms, width)]
    return x, ticks


def manhattan_plot(rows: pd.DataFrame, trait: str, threshold: float | None = None):
    """-log10 p of one trait's rows along the genome; a dashed line at the kept threshold."""
    x, ticks = genome_positions(rows)
    data = pd.DataFrame({"position": x, "minus_log10_p": minus_log10(rows["PValue"]),
                         "SNP": rows["SNP"].to_numpy(), "chromosome": rows["Chr"].astype(str)})
    parity = rows["Chr"].rank(method="dense").to_numpy().astype(int) % 2
    plots = [hv.Scatter(data[parity == k], "position", ["minus_log10_p", "SNP", "chromosome"])
             .opts(color=COLORS[k], size=4, tools=["hover"]) for k in (0, 1)]
    if threshold is not None:
        plots.append(hv.HLine(float(minus_log10(threshold))).opts(color="grey", line_dash="dashed"))
    return hv.Overlay(plots).opts(
        title=f"Manhattan plot: {trait}", xlabel="chromosome", ylabel="-log10 p", xticks=ticks,
        width=700, height=320, show_legend=False)


def qq_plot(rows: pd.DataFrame, trait: str, tests: int, lambda_gc: float):
    """Observed against expected -log10 p of one trait: the i-th smallest of ``tests`` p-values
    expected at (i - 0.5) / tests (so rows kept above a threshold still plot at their rank)."""
    observed = np.sort(rows["PValue"].to_numpy())
    expected = (np.arange(1, len(observed) + 1) - 0.5) / tests
    data = pd.DataFrame({"expected": minus_log10(expected), "observed": minus_log10(observed)})
    top = float(max(data["expected"].max(), data["observed"].max(), 1.0)) if len(data) else 1.0
    line = hv.Curve([(0, 0), (top, top)]).opts(color="grey", line_dash="dashed")
    return (hv.Scatter(data, "expected", "observed").opts(color=COLORS[0], size=4) * line).opts(
        title=f"QQ plot: {trait} (lambda_GC = {lambda_gc:.3f})", xlabel="expected -log10 p",
        ylabel="observed -log10 p", width=380, height=320)


def locus_heatmap(frame: pd.DataFrame, traits: list[str]):
    """max -log10 p of each trait in each locus (chromosome cut into LOCUS_BINS windows);
    a cell with no kept row shows 0."""
    rows = frame[frame["Pheno"].isin(traits)]
    chroms = pd.unique(frame["Chr"].sort_values(kind="stable"))
    span = frame.groupby("Chr")["ChrPos"].agg(["min", "max"])
    lo, hi = span["min"].loc[rows["Chr"]].to_numpy(), span["max"].loc[rows["Chr"]].to_numpy()
    window = np.minimum(((rows["ChrPos"].to_numpy() - lo) / np.maximum(hi - lo, 1.0)
                         * LOCUS_BINS).astype(int), LOCUS_BINS - 1)
    loci = [f"{c}:{w + 1:02d}" for c in chroms for w in range(LOCUS_BINS)]
    cells = pd.DataFrame({"trait": rows["Pheno"].astype(str).to_numpy(),
                          "locus": [f"{c}:{w + 1:02d}" for c, w in zip(rows["Chr"], window)],
                          "minus_log10_p": minus_log10(rows["PValue"])})
    grid = cells.groupby(["trait", "locus"])["minus_log10_p"].max().unstack() \
        .reindex(index=traits, columns=loci).fillna(0.0)
    long = grid.stack().rename("minus_log10_p").reset_index()
    return hv.HeatMap(long, ["locus", "trait"], "minus_log10_p").opts(
        title=f"-log10 p by trait and locus ({len(traits)} traits, {LOCUS_BINS} windows per "
              "chromosome)", cmap="Blues", colorbar=True, tools=["hover"], xrotation=90,
        width=900, height=max(240, min(1200, 14 * len(traits) + 120)), xlabel="locus",
        ylabel="trait", fontsize={"xticks": 6, "yticks": 7 if len(traits) <= 60 else 0})
