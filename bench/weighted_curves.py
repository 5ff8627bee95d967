"""Curves and tests of an inverse-probability-weighted cohort at n rows, survscan against R's
survival in one run: the Kaplan-Meier curves by treatment with Greenwood's and with the robust
(infinitesimal-jackknife) variance, the cumulative incidence of a cause (R's multi-state
survfit, whose only variance is the robust one), and the log-rank test with the robust score
test's variance (R: coxph(Surv ~ treat, weights, ties = "breslow"), its robust score test).

    python -m bench.weighted_curves [n] [repeats]

The data: n rows, follow-up in days (whole numbers, 1 to 2,000), 30% cause 1 and 20% cause 2,
a 0/1 treatment and weights uniform on (0.3, 3).  Each estimate's best-of-``repeats`` wall
seconds, and the largest relative difference from R's standard errors at days 365, 730 and
1,095 (the same numbers: the two compute one definition), as JSON with the CPU model; R's
side is skipped, and said so, where Rscript or its survival package is missing.
"""
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import engine
from bench.spline_term import cpu_name

TIMES = (365, 730, 1095)
R_SCRIPT = r"""
library(survival)
d <- read.csv(commandArgs(TRUE)[1])
best <- function(f) { t <- Inf; for (i in seq_len(REPEATS)) t <- min(t, system.time(f())[["elapsed"]]); t }
km <- function(robust) survfit(Surv(time, any) ~ treat, data = d, weights = w, robust = robust)
cif <- function() survfit(Surv(time, factor(cause)) ~ treat, data = d, weights = w)
lr <- function() coxph(Surv(time, any) ~ treat, data = d, weights = w, ties = "breslow")
s1 <- summary(km(TRUE), times = TIMES)$std.err
s2 <- summary(cif(), times = TIMES)$std.err[, 2]
cat(paste0('{"km_greenwood_s": ', best(function() km(FALSE)),
    ', "km_robust_s": ', best(function() km(TRUE)), ', "cif_s": ', best(cif),
    ', "logrank_robust_s": ', best(lr), ', "km_se": [', paste(format(s1, digits = 17), collapse = ","),
    '], "cif_se": [', paste(format(s2, digits = 17), collapse = ","),
    '], "robust_score": ', format(summary(lr())$robscore[["test"]], digits = 17), '}\n'))
"""


def frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    u = rng.random(n)
    cause = np.where(u < 0.3, 1, np.where(u < 0.5, 2, 0))
    return pd.DataFrame({"time": rng.integers(1, 2001, n).astype(float), "cause": cause,
                         "any": (cause > 0).astype(int), "treat": rng.integers(0, 2, n),
                         "w": rng.uniform(0.3, 3.0, n)})


def best(f, repeats):
    out = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = f()
        out = min(out, time.perf_counter() - t0)
    return out, value


def ours(d: pd.DataFrame, repeats: int) -> dict:
    cohort = engine.Cohort.from_frame(d, "time", "any", covariates=["treat"], weights="w")
    km = {v: best(lambda v=v: engine.kaplan_meier(cohort, by="treat", conf_type="log",
                                                  variance=v), repeats)
          for v in ("greenwood", "robust")}
    cif = best(lambda: engine.cumulative_incidence(d, cause=1, by="treat", time="time",
                                                   event="cause", weights="w"), repeats)
    lr = best(lambda: engine.logrank_test(cohort, by="treat"), repeats)
    at = [c["std_err"].to_numpy()[np.searchsorted(c["time"], TIMES, "right") - 1]
          for _, c in cif[1].groupby("group", sort=True)]
    return {"km_greenwood_s": km["greenwood"][0], "km_robust_s": km["robust"][0],
            "cif_s": cif[0], "logrank_robust_s": lr[0],
            "km_se": km["robust"][1].at(list(TIMES), conf_type="log")["std_err"].tolist(),
            "cif_se": np.concatenate(at).tolist(),
            "robust_score": lr[1].statistic}


def r_side(d: pd.DataFrame, repeats: int) -> dict:
    script = R_SCRIPT.replace("REPEATS", str(repeats)).replace(
        "TIMES", f"c({', '.join(map(str, TIMES))})")
    return rscript_json(script, d)


def rscript_json(script: str, d: pd.DataFrame) -> dict:
    """The JSON line ``script`` prints last, run by Rscript on ``d`` written to a CSV (its
    path the script's first argument); {"skipped": why} without Rscript or when R fails."""
    if shutil.which("Rscript") is None:
        return {"skipped": "Rscript is not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        d.to_csv(path, index=False)
        run = subprocess.run(["Rscript", "-e", script, str(path)], capture_output=True,
                             text=True)
    if run.returncode != 0:
        return {"skipped": f"R failed: {run.stderr.strip()[-300:]}"}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(n: int = 1_000_000, repeats: int = 2) -> dict:
    d = frame(n)
    engine.kaplan_meier(engine.Cohort.from_frame(d.head(1000), "time", "any", covariates=[],
                                                 weights="w"))        # imports and JIT
    out = {"cpu": cpu_name(), "n": n, "survscan": ours(d, repeats), "R": r_side(d, repeats)}
    if "skipped" not in out["R"]:
        for key in ("km_se", "cif_se"):
            mine, theirs = np.asarray(out["survscan"][key]), np.asarray(out["R"][key])
            out[f"{key}_max_rel_diff"] = float(np.max(np.abs(mine / theirs - 1)))
        out["robust_score_rel_diff"] = abs(out["survscan"]["robust_score"]
                                           / out["R"]["robust_score"] - 1)
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
