"""Ties, strata and entry times against the plain fit of the same subjects (issue 20 item 5).

One simulated cohort (engine.simulate) fitted six ways at the same L1 strength (0.1 x the plain
fit's lambda_max): plain (continuous times, no ties); day-resolution times (the times rounded
up to whole days, the median at day 30: hundreds to thousands of events per tied time) with
Breslow and with Efron; K strata; entry times (each start uniform in [0, stop/2)).  Each fit is
engine.fit end to end (the sort included), best of ``repeats`` rounds in which the fits alternate.
"""
import time

import numpy as np

import engine
from bench.report import machine_info, save


def _cohorts(n, p, density, strata, seed):
    base = engine.simulate(n, p, density=density, seed=seed)
    t, e, X = np.asarray(base.time), np.asarray(base.event), base.X
    days = np.ceil(t * 30.0 / np.median(t))
    start = np.random.default_rng(seed + 1).uniform(0.0, 0.5, n) * t
    labels = np.random.default_rng(seed + 2).integers(0, strata, n)
    make = engine.Cohort.from_arrays
    names = base.names
    return base, {
        "plain": (base, "breslow"),
        "day ties, breslow": (make(time=days, event=e, X=X, names=names), "breslow"),
        "day ties, efron": (make(time=days, event=e, X=X, names=names), "efron"),
        f"{strata} strata": (make(time=t, event=e, X=X, names=names, strata=labels), "breslow"),
        "entry times": (make(time=t, event=e, X=X, names=names, start=start,
                              id=np.arange(n)), "breslow"),
    }


def run(n, p, density=0.05, strata=100, ratio=0.1, repeats=2, seed=0, out="bench/results"):
    base, cohorts = _cohorts(n, p, density, strata, seed)
    engine.fit(engine.simulate(200, 5, density=0.2, seed=seed), penalty=engine.L1(1.0))  # JIT
    lam = ratio * engine.path(base, grid=2).lambda_max
    fits = {}
    for _ in range(repeats):          # round robin: load changes hit every fit alike
        for label, (cohort, ties) in cohorts.items():
            t0 = time.perf_counter()
            res = engine.fit(cohort, ties=ties, penalty=engine.L1(lam))
            wall = time.perf_counter() - t0
            if label not in fits or wall < fits[label]["wall_s"]:
                fits[label] = {"wall_s": wall, "ties": ties, "n_iter": res.n_iter,
                               "converged": bool(res.converged),
                               "nonzero": int(np.count_nonzero(res.coef)),
                               "timings": res.timings}
            print(f"{label}: {wall:.2f} s, {res.n_iter} steps", flush=True)
    day = np.asarray(cohorts["day ties, breslow"][0].time)[np.asarray(base.event) > 0]
    per_time = np.unique(day, return_counts=True)[1]
    plain = fits["plain"]["wall_s"]
    for label, f in fits.items():
        f["ratio_to_plain"] = f["wall_s"] / plain
    record = {"experiment": "ties_strata", "n": n, "p": p, "density": density, "ratio": ratio,
              "lambda": lam, "strata": strata, "events": int(base.n_events),
              "event_days": int(per_time.size), "events_per_day_median": float(np.median(per_time)),
              "events_per_day_max": int(per_time.max()),
              "efron_over_breslow": fits["day ties, efron"]["wall_s"]
              / fits["day ties, breslow"]["wall_s"],
              "fits": fits, "machine": machine_info()}
    lines = [f"# Ties, strata, entry times: N={n:,}, P={p:,} (density {density}), L1 at "
             f"{ratio} x lambda_max; day ties: {record['event_days']:,} event days, median "
             f"{record['events_per_day_median']:.0f} and max {record['events_per_day_max']:,} "
             "events per day", "",
             "| fit | ties | wall (s) | outer steps | ratio to plain |", "|---|---|---:|---:|---:|"]
    lines += [f"| {label} | {f['ties']} | {f['wall_s']:.2f} | {f['n_iter']} | "
              f"{f['ratio_to_plain']:.2f} |" for label, f in fits.items()]
    m = record["machine"]
    lines += ["", f"Efron / Breslow on the day ties: {record['efron_over_breslow']:.2f}", "",
              f"machine: {m['cpu']}, {m['logical_cores']} logical cores, load average "
              f"{m['load_average_1_5_15min']}; engine.fit end to end (sort included), best of "
              f"{repeats} rounds (the fits alternate)."]
    text = "\n".join(lines)
    return save(record, text, out, f"ties_strata_n{n}_p{p}")
