"""NUTS reference for the horseshoe probit on the breast-cancer data, stored for the tests.

    python -m bench.bayes_reference [--warmup 1000 --samples 2500 --chains 4 --seed 0]

Runs NumPyro NUTS (bench/nuts.py) on the bundled breast-cancer data, standardised exactly as
engine.sample does (centred, unit standard deviation with ddof=0, an intercept with a
N(0, 10^2) prior), maps the draws back to the covariates' scale and writes each coefficient's
posterior mean, 5% and 95% quantiles with their Monte Carlo standard errors (ArviZ) to
tests/data/bayes_nuts_breast_cancer.json, with the command that made them.
"""
import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

import engine
from bench.nuts import run_nuts

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "bayes_nuts_breast_cancer.json"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.bayes_reference")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-accept", type=float, default=0.99)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    df = engine.datasets.load_breast_cancer()
    y = df.pop("target_benign").to_numpy()
    X = df.to_numpy(dtype=np.float64)
    center, scale = X.mean(axis=0), X.std(axis=0)
    run = run_nuts((X - center) / scale, y, warmup=args.warmup, samples=args.samples,
                   chains=args.chains, seed=args.seed, target_accept=args.target_accept)
    draws = run["draws"].copy()
    draws[..., 1:] /= scale
    draws[..., 0] -= draws[..., 1:] @ center
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    names = ["(intercept)", *df.columns]
    post = az.from_dict(posterior={"beta": draws}, coords={"coefficient": names},
                        dims={"beta": ["coefficient"]}).posterior
    flat = draws.reshape(-1, len(names))

    def column(values):
        return dict(zip(names, np.asarray(values, dtype=float).round(10).tolist()))

    record = {
        "what": "NumPyro NUTS, horseshoe probit, breast-cancer data (sample_data), "
                "standardised (ddof=0) with an N(0, 10^2) intercept; original-scale summaries",
        "command": "python -m bench.bayes_reference " + " ".join(argv if argv is not None
                                                                  else sys.argv[1:]),
        "settings": {**vars(args), "out": None},
        "seconds": run["seconds"], "divergences": run["divergences"],
        "mean": column(flat.mean(0)),
        "q5": column(np.quantile(flat, 0.05, axis=0)),
        "q95": column(np.quantile(flat, 0.95, axis=0)),
        "mcse_mean": column(az.mcse(post, method="mean")["beta"].values),
        "mcse_q5": column(az.mcse(post, method="quantile", prob=0.05)["beta"].values),
        "mcse_q95": column(az.mcse(post, method="quantile", prob=0.95)["beta"].values),
        "ess_bulk": column(az.ess(post, method="bulk")["beta"].values),
        "r_hat": column(az.rhat(post)["beta"].values),
    }
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"NUTS {run['seconds']:.1f} s, {run['divergences']} divergences; "
          f"min ESS {min(record['ess_bulk'].values()):.0f}; wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
