"""Poisson regression of events on person-time at n rows x p dense covariates, survscan against
statsmodels' GLM (IRLS), scikit-learn's PoissonRegressor (Newton-Cholesky, the rate y / t as
response with t as sample weight: the same likelihood up to a constant) and R's glm (log t as
offset) in one run.

    python -m bench.poisson [n] [p] [repeats] [sparse_p]

The data: a 0/1 treatment and p - 1 normal covariates, person-time uniform on (0.1, 5) and at
most one event a row, of rate exp(eta) (about a quarter of the rows).  Each fit's best-of-
``repeats`` wall seconds and its largest coefficient difference from survscan's (time ratios
are read at equal accuracy: within bench.report.COEF_ATOL), as JSON with the CPU model; R's side
is skipped, and said so, where Rscript is missing.  Then, with ``sparse_p`` > 0, the L1 fit at
0.1 lambda_max of n x sparse_p binary columns at 5% (engine.simulate), the Cox fit of the same
cohort beside it for scale: no peer fits an L1 Poisson model with an offset at that size
(scikit-learn's PoissonRegressor is L2 only, statsmodels' fit_regularized a Python loop).
"""
import json
import sys

import numpy as np
import pandas as pd
import statsmodels.api as sm
from sklearn.linear_model import PoissonRegressor

import engine
from bench.spline_term import cpu_name
from bench.weighted_curves import best, rscript_json

R_SCRIPT = r"""
d <- read.csv(commandArgs(TRUE)[1])
f <- reformulate(setdiff(names(d), c("t", "y")), response = "y")
best <- Inf
for (i in seq_len(REPEATS)) {
  best <- min(best, system.time(fit <- glm(f, family = poisson, offset = log(t), data = d,
                                           control = glm.control(epsilon = 1e-12)))[["elapsed"]])
}
cat(paste0('{"seconds": ', best, ', "coef": [', paste(format(coef(fit), digits = 17),
    collapse = ","), ']}\n'))
"""


def frame(n: int, p: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p))
    X[:, 0] = rng.integers(0, 2, n)
    t = rng.uniform(0.1, 5.0, n)
    eta = -2.5 - 0.4 * X[:, 0] + X[:, 1:] @ rng.normal(0, 0.15, p - 1)
    y = (rng.random(n) < 1 - np.exp(-t * np.exp(eta))).astype(int)
    d = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    return d.assign(t=t, y=y)


def peers(d: pd.DataFrame, repeats: int) -> dict:
    names = [c for c in d.columns if c not in ("t", "y")]
    X = d[names].to_numpy()
    cohort = engine.Cohort.from_frame(d, "t", "y", covariates=names)
    ours = best(lambda: engine.fit(cohort, model="poisson", tol=1e-12), repeats)
    out = {"survscan": {"seconds": ours[0], "iterations": ours[1].n_iter}}
    coef = ours[1].coef.to_numpy()
    glm = best(lambda: sm.GLM(d["y"].to_numpy(), sm.add_constant(X), family=sm.families.Poisson(),
                              exposure=d["t"].to_numpy()).fit(tol=1e-12), repeats)
    out["statsmodels"] = {"seconds": glm[0], "coef_diff": float(np.max(np.abs(glm[1].params
                                                                              - coef)))}
    rate = (d["y"] / d["t"]).to_numpy()
    sk = best(lambda: PoissonRegressor(alpha=0.0, solver="newton-cholesky", tol=1e-12,
                                       max_iter=1000).fit(X, rate, sample_weight=d["t"]), repeats)
    sk_coef = np.concatenate([[sk[1].intercept_], sk[1].coef_])
    out["scikit-learn"] = {"seconds": sk[0], "coef_diff": float(np.max(np.abs(sk_coef - coef)))}
    r = r_side(d, repeats)
    if "skipped" not in r:
        r["coef_diff"] = float(np.max(np.abs(np.asarray(r.pop("coef")) - coef)))
    out["R glm"] = r
    return out


def r_side(d: pd.DataFrame, repeats: int) -> dict:
    return rscript_json(R_SCRIPT.replace("REPEATS", str(repeats)), d)


def sparse_l1(n: int, p: int, repeats: int) -> dict:
    cohort = engine.simulate(n, p, density=0.05, seed=0)
    out = {"n": n, "p": p, "density": 0.05}
    for model in ("poisson", "cox"):
        penalty = engine.L1(0.1 * engine.lambda_max(cohort, model=model))
        seconds, res = best(lambda: engine.fit(cohort, model=model, penalty=penalty), repeats)
        out[model] = {"seconds": seconds, "iterations": res.n_iter,
                      "non_zero": int((res.coef != 0).sum())}
    return out


def main(n: int = 1_000_000, p: int = 20, repeats: int = 2, sparse_p: int = 0) -> dict:
    d = frame(n, p)
    small = d.head(500)
    engine.fit(engine.Cohort.from_frame(small, "t", "y", covariates=["x0"]), model="poisson")
    out = {"cpu": cpu_name(), "n": n, "p": p, "events": int(d["y"].sum()),
           **peers(d, repeats)}
    if sparse_p:
        out["sparse_l1"] = sparse_l1(n, sparse_p, repeats)
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:5]))
