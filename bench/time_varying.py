"""Time-varying Cox at scale: the cost of a cut point against the plain fit of the same subjects.

Yang2024 sec. 2.3: one covariate's effect split at a cut point becomes one covariate per
interval on episodes.  For the same simulated subjects this times (1) the plain Cox fit, (2) the
cut-point fit by the papers' interval-strata route and (3) by the general counting-process route,
and reports (2)/(1) and (3)/(1) with the two routes' agreement.
"""
import time

import numpy as np

import engine
from bench.report import machine_info, save


def run(n, p, density=0.05, ratio=0.1, seed=0, cut_quantile=0.5, out="bench/results"):
    """Fit plain, strata-route and counting-route models; write JSON + Markdown; return record."""
    cohort = engine.simulate(n, p, density=density, seed=seed)
    lam = ratio * float(np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p)))))
    cut = float(np.quantile(cohort.time[cohort.event > 0], cut_quantile))
    options = dict(penalty=engine.L1(lam), unpenalized=["x0"])
    fits = {}
    for label, extra in [("plain", {}),
                         ("cut, strata route", {"cut_points": {"x0": [cut]}, "tv_route": "strata"}),
                         ("cut, counting route", {"cut_points": {"x0": [cut]},
                                                  "tv_route": "counting"})]:
        print(f"fitting {label} ...", flush=True)
        t0 = time.perf_counter()
        res = engine.fit(cohort, **options, **extra)
        fits[label] = (time.perf_counter() - t0, res)
    plain_s = fits["plain"][0]
    a, b = fits["cut, strata route"][1], fits["cut, counting route"][1]
    record = {
        "experiment": "time_varying", "n": n, "p": p, "density": density, "ratio": ratio,
        "lambda": lam, "cut": cut, "episodes": a.spec["episodes"],
        "routes_max_abs_coef_diff": float(np.max(np.abs(a.coef - b.coef))),
        "fits": {label: {"wall_s": s, "n_iter": r.n_iter, "loglik": r.loglik,
                         "timings": r.timings, "ratio_to_plain": s / plain_s}
                 for label, (s, r) in fits.items()},
        "machine": machine_info(),
    }
    lines = [f"# Time-varying Cox: N={n:,} subjects, P={p:,}, one cut point at t={cut:.4g} "
             f"({record['episodes']:,} episodes), L1 at {ratio} x lambda_max", "",
             "| fit | wall (s) | iterations | ratio to plain |", "|---|---:|---:|---:|"]
    lines += [f"| {label} | {f['wall_s']:.2f} | {f['n_iter']} | {f['ratio_to_plain']:.2f} |"
              for label, f in record["fits"].items()]
    lines += ["", f"routes agree: max |coef difference| = {record['routes_max_abs_coef_diff']:.2e}"]
    text = "\n".join(lines)
    return save(record, text, out, f"time_varying_n{n}_p{p}")
