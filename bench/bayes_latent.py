"""python -m bench.bayes_latent: the GPU sampler's z step, fused against unfused, on a device.

One iteration's z step of engine/bayes/gpu.py at Terenin2019's size (N = 10^6, p = 1,000, X
drawn on the device, float32 by default): the steps the fused kernel replaced (cuBLAS GEMV
mu = X beta, the latent_z kernel, GEMV X'z: X read twice) and latent_pass + latent_sum (X read
once) under a grid of launches (engine/bayes/latent_launch.py's knobs: threads a block, rows a
tile, blocks a multiprocessor, the L2 prefetch). Reported per row: ms per z step (best of
``repeats`` after a warm-up), the rate of reading X once (bytes of X / ms), and the largest gap
of z and X'z to the first fused launch's (the knobs reorder sums only). Needs a CUDA device (or
the tests' emulator).
"""
import dataclasses
import itertools
import json
import os
import time

import numpy as np

from bench.report import machine_info

THREADS, ROWS, BLOCKS_PER_SM = (128, 256), (4, 8, 12, 16), (1, 2, 3)
SHARED_BYTES = 48 * 1024       # a block's static shared memory (latent_pass: dots, lanes, z)


def launches(p, itemsize, threads=THREADS, rows=ROWS, blocks_per_sm=BLOCKS_PER_SM):
    """For p columns of ``itemsize`` bytes: the default launch first, then it without the L2
    prefetch, then every setting of the grid whose shared arrays fit."""
    from engine.bayes.latent_launch import LatentLaunch

    default = LatentLaunch.for_columns(p, itemsize)
    grid = [default, dataclasses.replace(default, prefetch=False)]
    for t, r, b in itertools.product(threads, rows, blocks_per_sm):
        launch = LatentLaunch.for_columns(p, itemsize, threads=t, rows=r,
                                          held_bytes=r * p * itemsize, blocks_per_sm=b)
        if launch not in grid and launch.rows * (launch.threads + 33) * 8 <= SHARED_BYTES:
            grid.append(launch)
    return grid


def _design(cp, n, p, precision, seed):
    """X ~ N(0, 1) of n x p, drawn on the device (with CuPy's generator where there is one)."""
    if hasattr(cp.random, "RandomState") and cp.random is not np.random:
        return cp.random.RandomState(seed).standard_normal((n, p), dtype=precision)
    return cp.asarray(np.random.default_rng(seed).normal(size=(n, p)).astype(precision))


def _best_ms(step, sync, repeats):
    step()
    sync()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync()
        best = min(best, time.perf_counter() - start)
    return 1e3 * best


def run(n=1_000_000, p=1_000, precision="float32", repeats=10, seed=0, grid=None,
        out="bench/results"):
    """Time the unfused z step and latent_pass under each launch of ``grid`` (launches)."""
    import cupy as cp

    from engine import device
    from engine.bayes import gpu

    rng = np.random.default_rng(seed)
    X = _design(cp, n, p, precision, seed)
    beta = cp.asarray(rng.normal(scale=0.05, size=p))
    sign = cp.asarray(np.where(rng.random(n) < 0.5, 1.0, -1.0))
    key, it = (np.uint64(seed), np.uint64(0)), np.uint64(1)
    x_bytes = X.size * X.dtype.itemsize
    qparts = cp.empty(2)
    sync = lambda: float(qparts[0].get())                  # noqa: E731 (a copy waits)
    z32 = cp.empty(n, dtype=X.dtype)
    latent_z = gpu.LatentStep(cp, X, sign).k["latent_z"]

    def unfused():
        mu = X @ beta.astype(X.dtype)
        latent_z((-(-n // gpu.THREADS),), (gpu.THREADS,), (np.int64(n), mu, sign, *key, it, z32))
        qparts[0] = (X.T @ z32)[0]

    rows = [{"launch": "unfused (GEMV, latent_z, GEMV)",
             "ms": _best_ms(unfused, sync, repeats)}]
    reference = None
    for launch in grid or launches(p, X.dtype.itemsize):
        step = gpu.LatentStep(cp, X, sign, launch)
        ms = _best_ms(lambda: step(beta, key, it, qparts), sync, repeats)
        now = (step.z.get(), step.Xtz.get())
        reference = reference or now
        rows.append({"launch": {**vars(launch), "registers": launch.registers,
                                "blocks": step.blocks},
                     "ms": ms,
                     "z_gap": float(np.max(np.abs(now[0] - reference[0]))),
                     "Xtz_rel_gap": float(np.max(np.abs(now[1] - reference[1]))
                                          / np.max(np.abs(reference[1])))})
    for row in rows:
        row["x_read_GB_per_s"] = x_bytes / row["ms"] / 1e6
    record = {"benchmark": "bayes-latent", "device": device.description(),
              "problem": {"n": n, "p": p, "precision": precision, "x_bytes": x_bytes},
              "repeats": repeats, "rows": rows, "machine": machine_info()}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"bayes_latent_n{n}_p{p}_{precision}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    for row in sorted(rows, key=lambda r: r["ms"]):
        print(f"{row['ms']:8.3f} ms  {row['x_read_GB_per_s']:7.0f} GB/s  {row['launch']}")
    print(f"wrote {path}")
    return record


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.bayes_latent", description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=1_000)
    parser.add_argument("--precision", choices=("float32", "float64"), default="float32")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    run(args.n, args.p, args.precision, args.repeats, out=args.out)
