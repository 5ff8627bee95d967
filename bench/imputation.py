"""Multiple imputation of a covariate missing at random given the outcome: what each method
estimates, and what it costs against statsmodels' MICE with its PHReg.

    python -m bench.imputation [n] [seeds] [m]

Simulates n subjects with hazard exp(0.5 x1 + 0.5 x2), x2 = 0.6 x1 + N(0, 0.8^2), exponential
censoring, and x2 missing with probability expit(-1 + x1 + 1.2 event) (about 43%), per seed;
then fits the Cox model to the full data, the complete cases, engine.impute's chained equations
(method="mice") and SMC-FCS (the default), m data sets each, and times statsmodels' MICE
fitting PHReg on the same imputation model (the same draws as method="mice": tests/engine/
missing/test_imputation.py).  Prints the CPU model and JSON: per seed each method's x2
coefficient and pooled SE, and seconds.  The figures of docs/guide/missing_data.md.
"""
import json
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy import special

import engine
from bench.spline_term import cpu_name
from engine.missing.chained_equations import nelson_aalen_at


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = 0.6 * x1 + rng.normal(scale=0.8, size=n)
    t = rng.exponential(1 / np.exp(0.5 * x1 + 0.5 * x2))
    c = rng.exponential(1.5, n)
    event = (t <= c).astype(int)
    full = pd.DataFrame({"time": np.minimum(t, c), "event": event, "x1": x1, "x2": x2})
    gone = rng.uniform(size=n) < special.expit(-1.0 + x1 + 1.2 * event)
    return full, full.assign(x2=full["x2"].mask(gone))


def statsmodels_mice(data, m, seed):
    """statsmodels' MICE of x2 given x1, the event and its Nelson-Aalen hazard, fitting PHReg
    (Breslow) to each data set; its MICE.combine reads results._results, which PHReg's lack,
    so the fits are pooled by the same rule after it."""
    import statsmodels.api as sm
    from statsmodels.imputation.mice import MICE, MICEData

    frame = data[["x1", "x2"]].assign(
        event=data["event"].astype(float),
        H=nelson_aalen_at(data["time"].to_numpy(), data["event"].to_numpy()))
    time_ = data["time"].to_numpy()

    class TimedPHReg(sm.PHReg):
        @classmethod
        def from_formula(cls, formula, frame, **kwargs):
            return sm.PHReg.from_formula(formula, frame.assign(time=time_), **kwargs)

    mice = MICE("time ~ x1 + x2", TimedPHReg, MICEData(frame, k_pmm=5,
                                                          rng=np.random.default_rng(seed)),
                init_kwds={"status": data["event"].to_numpy(), "ties": "breslow"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mice.fit(n_burnin=10, n_imputations=m)
        except AttributeError:
            pass
    for result in mice.results_list:
        result._results = result
    return mice.combine()


def main(n=3000, seeds=4, m=10):
    out = {"cpu": cpu_name(), "n": n, "m": m, "runs": []}
    for seed in range(seeds):
        full, data = simulate(n, seed)
        run = {"seed": seed, "missing": float(data["x2"].isna().mean())}

        def cox(frame, **kwargs):
            res = engine.fit(engine.Cohort.from_frame(frame, "time", "event", ["x1", "x2"],
                                                      **kwargs), ties="breslow")
            return {"x2": float(res.coef["x2"]), "se": float(res.se["x2"])}

        run["full"] = cox(full)
        run["complete_cases"] = cox(data, missing="drop")
        for method in ("mice", "smcfcs"):
            t0 = time.perf_counter()
            pooled = engine.impute(data, "time", "event", method=method, m=m, seed=seed).fit(
                covariates=["x1", "x2"], ties="breslow")
            run[method] = {"x2": float(pooled.coef["x2"]), "se": float(pooled.se["x2"]),
                           "seconds": time.perf_counter() - t0}
        t0 = time.perf_counter()
        peer = statsmodels_mice(data, m, seed)
        run["statsmodels_mice"] = {"x2": float(peer.params[1]),
                                   "se": float(np.sqrt(peer.cov_params()[1, 1])),
                                   "seconds": time.perf_counter() - t0}
        out["runs"].append(run)
        print(json.dumps(run), flush=True)
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
