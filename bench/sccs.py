"""SCCS at scale (Suchard2013): survscan against statsmodels' ConditionalPoisson, the only Python
peer, at growing N, and one Laplace (L1) fit at Suchard2013's scale.

Part 1 fits the unpenalised conditional Poisson model to simulated eras (engine.simulate_sccs,
J drugs) with both tools; a time ratio is reported only when the coefficients agree to
COEF_ATOL (max abs), i.e. at the same optimum, on the cases whose counts vary between eras
(see _varying_counts).  statsmodels loops over cases in Python, so its sizes stop where it takes
minutes.  Part 2 simulates N cases x J drugs (Suchard2013's 10^6 x 1,500,
about 20 million eras), then fits L1 at ``ratio`` x lambda_max once, timing each stage.  Between
them, one profile-likelihood interval at 10,000 cases (the issue's target: under a second).
"""
import time

import numpy as np

import engine
from bench.report import COEF_ATOL, machine_info, save


def _statsmodels(sccs):
    from statsmodels.discrete.conditional_models import ConditionalPoisson

    X = sccs.X.toarray()
    t0 = time.perf_counter()
    model = ConditionalPoisson(sccs.events, X, groups=sccs.case, offset=np.log(sccs.length))
    fit = model.fit(method="newton", maxiter=100, tol=1e-12, disp=0)
    return time.perf_counter() - t0, np.asarray(fit.params), float(fit.llf)


def _varying_counts(sccs):
    """The cases whose event counts vary between eras.  statsmodels' conditional models drop
    the others ("no within-group variance"), right for logistic but not for Poisson, where such
    a case still informs beta; both tools are given the kept cases so that they maximise one
    likelihood."""
    codes = np.unique(sccs.case, return_inverse=True)[1]
    lo = np.full(codes.max() + 1, np.inf)
    hi = np.full(codes.max() + 1, -np.inf)
    np.minimum.at(lo, codes, sccs.events)
    np.maximum.at(hi, codes, sccs.events)
    keep = (lo < hi)[codes]
    return engine.SccsData.from_arrays(case=sccs.case[keep], length=sccs.length[keep],
                                       events=sccs.events[keep], X=sccs.X[keep],
                                       names=sccs.names)


def _peer_row(n, p, seed):
    sccs = _varying_counts(engine.simulate_sccs(n, p, eras_per_case=10, seed=seed))
    t0 = time.perf_counter()
    res = engine.fit(sccs, model="sccs")
    ours = time.perf_counter() - t0
    theirs, coef, llf = _statsmodels(sccs)
    gap = float(np.max(np.abs(coef - res.coef.to_numpy())))
    same = gap <= COEF_ATOL
    return {"n_cases": n, "p": sccs.p, "eras": sccs.n, "events": sccs.n_events,
            "survscan_s": ours, "statsmodels_s": theirs, "max_abs_coef_diff": gap,
            "loglik_diff": abs(llf - res.loglik), "same_optimum": same,
            "speedup": theirs / ours if same else None}


def run(sizes=(1_000, 3_000, 10_000, 30_000), peer_p=20, n=1_000_000, p=1_500, ratio=0.1,
        seed=0, out="bench/results"):
    """Both parts; write JSON + Markdown under ``out``; return the record."""
    warm = engine.simulate_sccs(200, 5, seed=seed)
    engine.fit(warm, model="sccs")
    engine.fit(warm, model="sccs", penalty=engine.L1(1.0))
    peers = []
    for size in sizes:
        print(f"survscan vs statsmodels at N={size:,} cases, J={peer_p} ...", flush=True)
        peers.append(_peer_row(size, peer_p, seed))
        print(f"  {peers[-1]}", flush=True)

    print("one profile-likelihood interval at N=10,000 cases, J=20 ...", flush=True)
    small = engine.simulate_sccs(10_000, 20, seed=seed)
    res = engine.fit(small, model="sccs")
    t0 = time.perf_counter()
    interval = res.confint("drug0").loc["drug0"]
    profile = {"n_cases": 10_000, "p": small.p, "eras": small.n,
               "seconds": time.perf_counter() - t0, "coef": float(res.coef["drug0"]),
               "lower": float(interval["lower"]), "upper": float(interval["upper"])}
    print(f"  {profile}", flush=True)

    print(f"simulating N={n:,} cases, J={p:,} drugs ...", flush=True)
    t0 = time.perf_counter()
    sccs = engine.simulate_sccs(n, p, seed=seed)
    sim_s = time.perf_counter() - t0
    print(f"  {sccs} in {sim_s:.1f} s", flush=True)
    t0 = time.perf_counter()
    lam_max = float(np.max(np.abs(engine.gradient(sccs, np.zeros(sccs.p), model="sccs"))))
    lam = ratio * lam_max
    grad_s = time.perf_counter() - t0
    print(f"fitting L1({lam:.4g}) ...", flush=True)
    t0 = time.perf_counter()
    res = engine.fit(sccs, model="sccs", penalty=engine.L1(lam))
    fit_s = time.perf_counter() - t0
    truth = sccs.beta_true
    coef = res.coef.to_numpy()
    large = {"n_cases": n, "p": sccs.p, "eras": sccs.n, "nnz": int(sccs.X.nnz),
             "events": sccs.n_events, "simulate_s": sim_s, "lambda_max_s": grad_s,
             "lambda": lam, "fit_s": fit_s, "timings": res.timings, "n_iter": res.n_iter,
             "converged": res.converged, "nonzero": int(np.count_nonzero(coef)),
             "true_signals": int(np.count_nonzero(truth)),
             "signals_found": int(np.count_nonzero(coef[truth != 0]))}
    record = {"experiment": "sccs", "peers": peers, "profile": profile, "large": large,
              "machine": machine_info()}
    lines = [f"# SCCS: survscan vs statsmodels ConditionalPoisson (J={peer_p}, unpenalised)",
             "", "| cases | eras | survscan (s) | statsmodels (s) | max abs coef diff | speed-up |",
             "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['n_cases']:,} | {r['eras']:,} | {r['survscan_s']:.3f} | "
              f"{r['statsmodels_s']:.2f} | {r['max_abs_coef_diff']:.1e} | "
              + (f"{r['speedup']:.0f}x |" if r["same_optimum"] else "not the same optimum |")
              for r in peers]
    lines += ["", f"One profile-likelihood interval (drug0) at N=10,000 cases, J=20, "
              f"{profile['eras']:,} eras: {profile['seconds']:.2f} s"]
    lines += ["", f"# One L1 fit at N={n:,} cases, J={sccs.p:,} drugs, {sccs.n:,} eras "
              f"({sccs.X.nnz:,} exposures), {sccs.n_events:,} events", "",
              f"simulate {sim_s:.1f} s; lambda_max (one gradient) {grad_s:.1f} s; fit at "
              f"{ratio} x lambda_max {fit_s:.1f} s (prepare {res.timings['prepare']:.1f} s, "
              f"solve {res.timings['solve']:.1f} s), {res.n_iter} iterations, converged="
              f"{res.converged}, {large['nonzero']} non-zero, {large['signals_found']} of "
              f"{large['true_signals']} true signals non-zero",
              "", f"machine: {record['machine'].get('cpu')}, load average "
              f"{record['machine'].get('load_average_1_5_15min')}"]
    text = "\n".join(lines)
    return save(record, text, out, f"sccs_n{n}_p{p}")
