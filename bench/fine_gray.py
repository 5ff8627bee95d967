"""Fine-Gray at scale: its forward-backward scans against the Cox fit of the same subjects, and
the cost of Fine & Gray's sandwich variance.

For one simulated cohort with a competing cause this times (1) the Cox fit of cause 1 (the
competing events counted as censored) and (2) the Fine-Gray fit of cause 1, both L1-penalised at
``ratio`` x their own lambda_max (the largest |gradient| at beta = 0), and reports (2)/(1).
Then, on N = 10,000, P = 10, an unpenalised Fine-Gray fit and its sandwich standard errors
(Fine & Gray 1999, O(N P^2)), timed apart.
"""
import time

import numpy as np

import engine
from bench.report import machine_info, save
from engine.data.simulate import simulate_arrays


def simulate_competing(n, p, density=0.05, censoring=0.3, competing=0.5, seed=0):
    """A Cohort with causes 1 and 2 (competing_risks=True) over the papers' (Yang2022, Yang2024) sparse binary X.

    Cause-1 times are the papers' (Yang2022, Yang2024) design (engine.simulate: exponential, rate exp(x' beta),
    independent censoring set by ``censoring``); cause-2 times are exponential with the
    constant rate that makes P(T2 < T1) about ``competing``.  Each row ends with the first of
    the three.  The true cause-specific beta is ``cohort.beta_true``.
    """
    t1, e1, X, beta, _ = simulate_arrays(n, p, density=density, censoring=censoring, seed=seed)
    rng = np.random.default_rng(seed + 1)
    rate1 = np.exp(X @ beta)
    rate2 = competing / (1.0 - competing) * np.median(rate1)
    t2 = rng.standard_exponential(n) / rate2
    code = np.where(e1 == 1, 1, 0)
    code = np.where(t2 < t1, 2, code)
    cohort = engine.Cohort.from_arrays(time=np.minimum(t1, t2), event=code, X=X,
                                       names=[f"x{j}" for j in range(p)], competing_risks=True)
    cohort.beta_true = beta
    return cohort


def _cox_view(cohort):
    """The same subjects for a Cox fit of cause 1: competing events counted as censored."""
    return engine.Cohort.from_arrays(time=cohort.time, event=(cohort.event == 1).astype(int),
                                     X=cohort.X, names=cohort.names)


def _timed_fit(cohort, model, ratio):
    kw = {"model": model, "cause": 1} if model == "fine_gray" else {"model": model}
    lam = ratio * float(np.max(np.abs(engine.gradient(cohort, np.zeros(cohort.p), **kw))))
    t0 = time.perf_counter()
    res = engine.fit(cohort, penalty=engine.L1(lam), **kw)
    return time.perf_counter() - t0, lam, res


def run(n, p, density=0.05, ratio=0.1, seed=0, out="bench/results", se_n=10_000, se_p=10):
    """Time Cox vs Fine-Gray at (n, p) and the sandwich at (se_n, se_p); write JSON + Markdown;
    return the record."""
    warm = simulate_competing(300, 5, density=0.3, seed=seed)
    for model in ("cox", "fine_gray"):
        _timed_fit(_cox_view(warm) if model == "cox" else warm, model, 0.5)
    _ = engine.fit(warm, model="fine_gray", cause=1).se

    print(f"simulating N={n:,} P={p:,} density={density} with a competing cause", flush=True)
    cohort = simulate_competing(n, p, density=density, seed=seed)
    fits = {}
    for label, model, data in [("cox (cause 1)", "cox", _cox_view(cohort)),
                               ("fine_gray (cause 1)", "fine_gray", cohort)]:
        print(f"fitting {label} ...", flush=True)
        wall, lam, res = _timed_fit(data, model, ratio)
        fits[label] = {"wall_s": wall, "lambda": lam, "n_iter": res.n_iter,
                       "converged": res.converged, "nonzero": int(np.count_nonzero(res.coef)),
                       "loglik": res.loglik, "timings": res.timings}
    cox_s = fits["cox (cause 1)"]["wall_s"]
    for f in fits.values():
        f["ratio_to_cox"] = f["wall_s"] / cox_s

    print(f"sandwich variance at N={se_n:,} P={se_p} ...", flush=True)
    small = simulate_competing(se_n, se_p, density=0.3, seed=seed)
    t0 = time.perf_counter()
    res = engine.fit(small, model="fine_gray", cause=1)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    se = res.se
    se_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    se_model = res.se_model
    se_model_s = time.perf_counter() - t0
    sandwich = {"n": se_n, "p": se_p, "fit_s": fit_s, "sandwich_se_s": se_s,
                "model_se_s": se_model_s, "se": se.tolist(), "se_model": se_model.tolist()}

    record = {"experiment": "fine_gray", "n": n, "p": p, "density": density, "ratio": ratio,
              "events_cause1": int(np.sum(cohort.event == 1)),
              "events_cause2": int(np.sum(cohort.event == 2)),
              "fits": fits, "sandwich": sandwich, "machine": machine_info()}
    lines = [f"# Fine-Gray vs Cox: N={n:,}, P={p:,} (density {density}), "
             f"{record['events_cause1']:,} cause-1 and {record['events_cause2']:,} competing "
             f"events, L1 at {ratio} x lambda_max", "",
             "| fit | wall (s) | iterations | non-zero | ratio to Cox |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {label} | {f['wall_s']:.2f} | {f['n_iter']} | {f['nonzero']} | "
              f"{f['ratio_to_cox']:.2f} |" for label, f in fits.items()]
    lines += ["", f"Sandwich variance, N={se_n:,}, P={se_p}: fit {fit_s:.3f} s, sandwich SEs "
              f"{se_s:.3f} s, model-based SEs {se_model_s:.3f} s"]
    text = "\n".join(lines)
    return save(record, text, out, f"fine_gray_n{n}_p{p}")
