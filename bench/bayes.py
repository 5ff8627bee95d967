"""python -m bench bayes: the horseshoe probit Gibbs sampler against NumPyro NUTS.

The paper's synthetic design (Terenin, Dong & Draper 2019, sec. 6.1): X ~ N(0, 1) of N x p,
beta = (1.3, 4, -1, 1.6, 5, -2, 0, ..., 0), y = 1(X beta + e > 0), no intercept, the horseshoe
on every coefficient. survscan (engine.sample, one chain of ``iterations`` on the CPU) and NUTS
(bench/nuts.py, ``nuts_chains`` chains of warm-up + samples) run on the same data in one call.
Reported per tool: wall time, iterations per second, bulk ESS of the coefficients (minimum and
median, ArviZ) and ESS per second. The ESS ratio is printed only when the two posteriors agree
(every posterior mean within 4 combined Monte Carlo standard errors, or 0.05 absolute).

With a CUDA device the same chain also runs on it (backend="gpu"; the row records why it was
skipped otherwise). ``python -m bench.bayes gpu`` is the device-scale run (Terenin2019's
N = 10^6, p = 1,000, 10,000 iterations; the data drawn on the device): the H100 target is
under 30 s (bench/on_device.sh runs it).
"""
import json
import os
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import engine
from bench.report import machine_info

PAPER_BETA = (1.3, 4.0, -1.0, 1.6, 5.0, -2.0)
AGREE_SE, AGREE_ATOL = 4.0, 0.05


def paper_design(n, p, seed):
    """X (n, p), y (n,), true beta (p,): sec. 6.1's synthetic data."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    beta = np.zeros(p)
    beta[: min(p, 6)] = PAPER_BETA[:p]
    y = (X @ beta + rng.normal(size=n) > 0).astype(np.int64)
    return X, y, beta


def _arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


def _stats(draws, seconds, iterations, cpu_seconds=None):
    """ESS, MCSE and rates of (chain, draw, coefficient) draws; with the CPU seconds (all
    threads of the process), ESS per CPU second too: on a loaded machine the wall time
    measures the load, the CPU time the work."""
    az = _arviz()
    post = az.convert_to_dataset(draws)
    ess = az.ess(post, method="bulk")["x"].values
    per_cpu = {} if cpu_seconds is None else {
        "cpu_s": cpu_seconds, "ess_per_cpu_s_min": float(ess.min() / cpu_seconds),
        "ess_per_cpu_s_median": float(np.median(ess) / cpu_seconds)}
    return {**per_cpu, "seconds": seconds, "iterations": iterations,
            "iterations_per_s": iterations / seconds,
            "ess_min": float(ess.min()), "ess_median": float(np.median(ess)),
            "ess_per_s_min": float(ess.min() / seconds),
            "ess_per_s_median": float(np.median(ess) / seconds),
            "mean": draws.mean((0, 1)).tolist(),
            "mcse": az.mcse(post, method="mean")["x"].values.tolist()}


def run(n=10_000, p=1_000, iterations=10_000, burn_in=None, seed=0, nuts_warmup=500,
        nuts_samples=500, nuts_chains=1, peers=("nuts",), out="bench/results",
        precision="float64"):
    """Run both samplers on one synthetic problem; write JSON + Markdown; return the record."""
    X, y, beta = paper_design(n, p, seed)
    cohort = engine.Cohort.from_arrays(time=None, event=y, X=X)
    burn_in = iterations // 4 if burn_in is None else burn_in
    print(f"paper design N={n:,} p={p:,}: survscan Gibbs, {iterations:,} iterations", flush=True)
    start, cpu = time.perf_counter(), time.process_time()
    post = engine.sample(cohort, draws=iterations - burn_in, burn_in=burn_in, chains=1,
                         seed=seed, intercept=False, standardize=False, parallel=None,
                         precision=precision)
    wall = time.perf_counter() - start
    tools = {f"survscan-gibbs-cpu-{precision}": {
        **_stats(post.draws, post.timings["sampling"], iterations, time.process_time() - cpu),
        "wall_s": wall, "prepare_s": post.timings["prepare"], "threads": post.spec["threads"]}}
    print(f"  {wall:.1f} s, {iterations / post.timings['sampling']:.0f} it/s", flush=True)
    reason = _no_device_reason()
    if reason is None:
        print("survscan Gibbs on the GPU (same chain)", flush=True)
        start = time.perf_counter()
        dev = engine.sample(cohort, draws=iterations - burn_in, burn_in=burn_in, chains=1,
                            seed=seed, intercept=False, standardize=False, backend="gpu",
                            precision=precision)
        tools[f"survscan-gibbs-gpu-{precision}"] = {
            **_stats(dev.draws, dev.timings["sampling"], iterations),
            "wall_s": time.perf_counter() - start, "prepare_s": dev.timings["prepare"],
            "max_abs_gap_to_cpu_chain": float(np.abs(dev.draws - post.draws).max())}
    skipped = {} if reason is None else {f"survscan-gibbs-gpu-{precision}": reason}
    if "nuts" in peers:
        from bench.nuts import run_nuts

        total = nuts_chains * (nuts_warmup + nuts_samples)
        print(f"NumPyro NUTS, {nuts_chains} chain(s) x {nuts_warmup} + {nuts_samples}",
              flush=True)
        cpu = time.process_time()
        nuts = run_nuts(X, y, intercept=False, warmup=nuts_warmup, samples=nuts_samples,
                        chains=nuts_chains, seed=seed)
        tools["numpyro-nuts-cpu"] = {**_stats(nuts["draws"], nuts["seconds"], total,
                                              time.process_time() - cpu),
                                     "wall_s": nuts["seconds"],
                                     "divergences": nuts["divergences"],
                                     "leapfrog_steps": nuts["steps"]}
        print(f"  {nuts['seconds']:.1f} s, {nuts['divergences']} divergences", flush=True)
    record = {"benchmark": "bayes", "problem": {"n": n, "p": p, "seed": seed,
                                                "beta_nonzero": list(PAPER_BETA)},
              "settings": {"iterations": iterations, "burn_in": burn_in, "precision": precision,
                           "blas_threads": [i["num_threads"] for i in threadpool_info()],
                           "nuts_warmup": nuts_warmup, "nuts_samples": nuts_samples,
                           "nuts_chains": nuts_chains},
              "tools": tools, "skipped": skipped, "machine": machine_info(),
              "signal_means": {k: v["mean"][:6] for k, v in tools.items()},
              "truth": beta[:6].tolist()}
    if "numpyro-nuts-cpu" in tools:
        g, s = tools[f"survscan-gibbs-cpu-{precision}"], tools["numpyro-nuts-cpu"]
        gap = np.abs(np.subtract(g["mean"], s["mean"]))
        allowed = np.maximum(AGREE_SE * np.hypot(g["mcse"], s["mcse"]), AGREE_ATOL)
        record["agree"] = bool(np.all(gap <= allowed))
        record["max_mean_gap"] = float(gap.max())
        if record["agree"]:
            record["ess_per_s_ratio_median"] = g["ess_per_s_median"] / s["ess_per_s_median"]
            record["ess_per_s_ratio_min"] = g["ess_per_s_min"] / s["ess_per_s_min"]
            record["ess_per_cpu_s_ratio_median"] = (g["ess_per_cpu_s_median"]
                                                    / s["ess_per_cpu_s_median"])
            record["ess_per_cpu_s_ratio_min"] = g["ess_per_cpu_s_min"] / s["ess_per_cpu_s_min"]
    for v in tools.values():
        v.pop("mean"), v.pop("mcse")
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, f"bayes_n{n}_p{p}_it{iterations}_{precision}")
    with open(stem + ".json", "w") as f:
        json.dump(record, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(markdown(record))
    print(markdown(record))
    print(f"wrote {stem}.json and {stem}.md")
    return record


def markdown(record):
    """The record as a Markdown table."""
    pr, st = record["problem"], record["settings"]
    lines = [f"# Horseshoe probit, paper design N={pr['n']:,}, p={pr['p']:,} (seed {pr['seed']})",
             "", f"load average at the end: {record['machine']['load_average_1_5_15min']} on "
             f"{record['machine']['logical_cores']} cores ({record['machine']['cpu']})", "",
             "| tool | iterations | seconds | CPU s | it/s | ESS min | ESS median | ESS/s min | "
             "ESS/s median | ESS/CPU s median |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in record["tools"].items():
        lines.append(f"| {name} | {t['iterations']:,} | {t['seconds']:.1f} | "
                     f"{t.get('cpu_s', float('nan')):.1f} | "
                     f"{t['iterations_per_s']:.1f} | {t['ess_min']:.0f} | "
                     f"{t['ess_median']:.0f} | {t['ess_per_s_min']:.2f} | "
                     f"{t['ess_per_s_median']:.2f} | "
                     f"{t.get('ess_per_cpu_s_median', float('nan')):.2f} |")
    for name, reason in record.get("skipped", {}).items():
        lines.append(f"| {name} | skipped: {reason} | | | | | | | | |")
    gibbs_threads = next(iter(record["tools"].values())).get("threads", "?")
    lines += ["", f"Gibbs ({st['precision']}, BLAS threads {st['blas_threads']}, sampler threads "
              f"{gibbs_threads}): "
              f"{st['iterations']:,} iterations, {st['burn_in']:,} burn-in; NUTS: "
              f"{st['nuts_chains']} chain(s) x ({st['nuts_warmup']} warm-up + "
              f"{st['nuts_samples']} draws).", ""]
    lines.append("posterior means of the six signals (truth "
                 f"{record['truth']}):")
    for name, means in record["signal_means"].items():
        lines.append(f"- {name}: {[round(m, 3) for m in means]}")
    if "agree" in record:
        lines.append("")
        if record["agree"]:
            lines.append(f"posteriors agree (max mean gap {record['max_mean_gap']:.3f}); "
                         f"survscan / NUTS ESS per second: median "
                         f"{record['ess_per_s_ratio_median']:.1f}x, min "
                         f"{record['ess_per_s_ratio_min']:.2f}x; per CPU second (NUTS's "
                         "counts JAX's import, XLA compilation and pool threads): median "
                         f"{record['ess_per_cpu_s_ratio_median']:.1f}x, min "
                         f"{record['ess_per_cpu_s_ratio_min']:.1f}x")
        else:
            lines.append(f"posteriors DISAGREE (max mean gap {record['max_mean_gap']:.3f}): "
                         "no ESS ratio printed")
    return "\n".join(lines) + "\n"


def _no_device_reason():
    """Why the GPU rows cannot run here, or None."""
    from engine import device

    if not device.has_cupy():
        return "CuPy is not installed"
    if device.device_count() < 1:
        return "no CUDA device"
    return None


def run_gpu(n=1_000_000, p=1_000, iterations=10_000, burn_in=None, seed=0,
            precision="float32", out="bench/results"):
    """The paper's device-scale run: its design drawn on the device, one chain of
    ``iterations`` by engine.bayes.gpu (X'X, the chain and the kept draws on the device)."""
    import cupy as cp

    from engine import device
    from engine.bayes.gpu import HorseshoeProbitGpu

    burn_in = iterations // 4 if burn_in is None else burn_in
    start = time.perf_counter()
    rs = cp.random.RandomState(seed)
    X = rs.standard_normal((n, p), dtype=np.float32)
    truth = cp.zeros(p, dtype=np.float32)
    truth[:6] = cp.asarray(np.array(PAPER_BETA, np.float32))
    y = (X @ truth + rs.standard_normal(n, dtype=np.float32) > 0).astype(np.float64)
    gibbs = HorseshoeProbitGpu(X, y, np.ones(p, bool), precision=precision)
    cp.cuda.Device().synchronize()
    prepare = time.perf_counter() - start
    print(f"GPU paper run N={n:,} p={p:,} {precision}: prepared in {prepare:.1f} s", flush=True)
    chain = gibbs.run_chain(0, seed, iterations - burn_in, burn_in, 1, X.var(axis=0))
    record = {"benchmark": "bayes-gpu", "device": device.description(),
              "problem": {"n": n, "p": p, "seed": seed, "beta_nonzero": list(PAPER_BETA)},
              "settings": {"iterations": iterations, "burn_in": burn_in,
                           "precision": precision},
              "prepare_s": prepare, "tools": {f"survscan-gibbs-gpu-{precision}": _stats(
                  chain["beta"][None], chain["seconds"], iterations)},
              "target_s": 30.0, "machine": machine_info()}
    record["signal_means"] = record["tools"][f"survscan-gibbs-gpu-{precision}"].pop("mean")[:6]
    record["tools"][f"survscan-gibbs-gpu-{precision}"].pop("mcse")
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, f"bayes_gpu_n{n}_p{p}_it{iterations}_{precision}")
    with open(stem + ".json", "w") as f:
        json.dump(record, f, indent=1)
    t = record["tools"][f"survscan-gibbs-gpu-{precision}"]
    print(f"{iterations:,} iterations in {t['seconds']:.1f} s ({t['iterations_per_s']:.0f} it/s; "
          f"target < 30 s on an H100), ESS median {t['ess_median']:.0f}; signal means "
          f"{[round(m, 3) for m in record['signal_means']]}; wrote {stem}.json")
    return record


def profile(n=10_000, p=1_000, seed=0, blocks=5, per_block=20, out="bench/results"):
    """Milliseconds per Gibbs iteration on the CPU (HorseshoeProbit.step, one chain, one
    thread) and per part of it, float64 and float32, as CPU time (time.process_time) and wall
    time, each the minimum over ``blocks`` blocks of ``per_block`` calls. On a shared, loaded
    machine the wall time measures the load; the CPU time of one thread is close to the wall
    time on an idle core. ``two_threads`` is the wall time of an iteration with threads=2 (the
    second thread takes the Cholesky and a share of the rows, horseshoe_probit.split_rows): it
    gains only where a second core is free. The separate X beta, z | beta and X'z parts are
    what the one pass (latent_pass) replaces."""
    from engine.bayes import rng
    from engine.bayes.expansion import expansion_scale
    from engine.bayes.horseshoe_probit import HorseshoeProbit
    from engine.bayes.latent_pass import latent_pass
    from engine.bayes.truncated_normal import draw_latent

    X, y, _ = paper_design(n, p, seed)
    streams = rng.ChainStreams(seed, 0)
    record = {"benchmark": "bayes-profile", "problem": {"n": n, "p": p, "seed": seed},
              "blocks": blocks, "per_block": per_block, "iteration": {}, "parts": {}}

    def least(f):
        """(CPU ms, wall ms) per call, each the least over the blocks."""
        f()
        cpu, wall = [], []
        for _ in range(blocks):
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(per_block):
                f()
            cpu.append((time.process_time() - c0) / per_block * 1e3)
            wall.append((time.perf_counter() - t0) / per_block * 1e3)
        return {"cpu_ms": min(cpu), "wall_ms": min(wall)}

    for precision in ("float64", "float32"):
        gibbs = HorseshoeProbit(X, y, np.ones(p, bool), precision=precision)
        paired = HorseshoeProbit(X, y, np.ones(p, bool), precision=precision, threads=2)
        state = gibbs.initial_state()
        for it in range(20):                                    # leave the start
            state, z = gibbs.step(state, streams, it)
        beta, zd = state.beta.astype(gibbs.dtype), z.astype(gibbs.dtype)
        mu, d, Xtz = gibbs.X @ beta, gibbs.prior_precision(state), gibbs.X.T @ zd
        zbuf, Xtzbuf = np.empty(n), np.empty(p)
        parts = {
            "z | beta and X'z in one pass": least(lambda: latent_pass(
                gibbs.X, state.beta, gibbs.sign, streams.at(20, rng.STEP_Z), zbuf, Xtzbuf)),
            "expansion scale g": least(lambda: expansion_scale(
                n, float(n), streams.at(20, rng.STEP_EXPAND))),
            "X beta": least(lambda: gibbs.X @ beta),
            "z | beta": least(lambda: draw_latent(mu.astype(np.float64), gibbs.sign,
                                                  streams.at(20, rng.STEP_Z))),
            "X'z": least(lambda: gibbs.X.T @ zd),
            "Cholesky of X'X + D": least(lambda: gibbs.precision_draw.factor(d)),
            "two triangular solves": least(lambda: gibbs.precision_draw.solve(
                Xtz, np.zeros(p)))}
        whole = least(lambda: gibbs.step(state, streams, 20))
        whole["lambda, tau, nu, xi and the rest"] = whole["cpu_ms"] - sum(
            parts[k]["cpu_ms"] for k in ("z | beta and X'z in one pass", "expansion scale g",
                                         "Cholesky of X'X + D", "two triangular solves"))
        with threadpool_limits(1):
            whole["two_threads"] = least(lambda: paired.step(state, streams, 20))
        record["parts"][precision], record["iteration"][precision] = parts, whole
        print(f"{precision}: {whole['cpu_ms']:.1f} ms CPU per iteration ({whole['wall_ms']:.1f} "
              f"wall), {whole['cpu_ms'] * 10:.0f} s per 10,000 on one idle core; two threads "
              f"{whole['two_threads']['wall_ms']:.2f} ms wall; parts (CPU ms): "
              f"{ {k: round(v['cpu_ms'], 2) for k, v in parts.items()} }", flush=True)
    record["machine"] = machine_info()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"bayes_profile_n{n}_p{p}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {path}")
    return record


def schemes(n=10_000, p=100, iterations=5_000, seed=0, out="bench/results"):
    """The paper's scheme against tau_step="marginal" (tau moved with beta integrated out,
    engine/bayes/global_scale.py) on the paper's design: one chain each (one thread, a quarter
    burn-in), CPU seconds, bulk ESS of the coefficients (min, median) and of tau, and the ESS of
    the coefficients with lambda and tau held fixed after burn-in ("gibbs-fixed-scales"): if the
    nulls mix no faster then, tau is not what holds them back."""
    from engine.bayes.chain import run_chain
    from engine.bayes.horseshoe_probit import GibbsState, HorseshoeProbit
    from engine.bayes.rng import ChainStreams

    X, y, _ = paper_design(n, p, seed)
    az, burn_in = _arviz(), iterations // 4
    record = {"benchmark": "bayes-schemes", "problem": {"n": n, "p": p, "seed": seed},
              "iterations": iterations, "burn_in": burn_in, "schemes": {}}

    def ess(draws):
        return az.ess(az.convert_to_dataset(draws[None]), method="bulk")["x"].values

    for scheme in ("gibbs", "marginal"):
        gibbs = HorseshoeProbit(X, y, np.ones(p, bool), tau_step=scheme)
        cpu = time.process_time()
        chain = run_chain(gibbs, 0, seed, iterations - burn_in, burn_in, 1, X.var(axis=0))
        cpu = time.process_time() - cpu
        coef, tau = ess(chain["beta"]), ess(chain["tau"][:, None])[0]
        record["schemes"][scheme] = {"cpu_s": cpu, "ess_min": float(coef.min()),
                                     "ess_median": float(np.median(coef)),
                                     "ess_tau": float(tau),
                                     "ess_median_per_cpu_s": float(np.median(coef) / cpu)}
    gibbs, streams = HorseshoeProbit(X, y, np.ones(p, bool)), ChainStreams(seed, 0)
    state, kept = gibbs.initial_state(), np.empty((iterations - burn_in, p))
    for it in range(iterations):
        new, _ = gibbs.step(state, streams, it)
        if it >= burn_in:                       # keep lambda, tau, nu, xi where they were
            new = GibbsState(new.beta, *(getattr(state, f) for f in
                                         ("lambda_sq_inv", "nu_inv", "tau_sq_inv", "xi_inv")))
            kept[it - burn_in] = new.beta
        state = new
    fixed = ess(kept)
    record["schemes"]["gibbs-fixed-scales"] = {"ess_min": float(fixed.min()),
                                               "ess_median": float(np.median(fixed))}
    record["machine"] = machine_info()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"bayes_schemes_n{n}_p{p}_it{iterations}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    for name, row in record["schemes"].items():
        print(name, {k: round(v, 2) for k, v in row.items()}, flush=True)
    print(f"wrote {path}")
    return record


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.bayes",
                                     description="gpu: the device-scale GPU run (run_gpu); "
                                                 "profile: CPU ms per iteration (profile); "
                                                 "schemes: ESS of tau_step gibbs vs marginal")
    parser.add_argument("command", choices=["gpu", "profile", "schemes"])
    parser.add_argument("--n", type=int, help="rows (gpu: 1,000,000; profile: 10,000)")
    parser.add_argument("--p", type=int, default=1_000)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--precision", choices=("float32", "float64"), default="float32")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    if args.command == "gpu":
        run_gpu(args.n or 1_000_000, args.p, args.iterations, precision=args.precision,
                out=args.out)
    elif args.command == "schemes":
        schemes(args.n or 10_000, args.p, args.iterations, out=args.out)
    else:
        profile(args.n or 10_000, args.p, out=args.out)
