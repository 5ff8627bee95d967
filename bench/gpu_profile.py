"""Where one GPU fit's time goes, end to end: python -m bench.gpu_profile [N] [OUT_DIR].

The Cox L1 fit of bench/problems.py (P = 1,000, 5% density, K = 1, 0.1 x lambda_max) at N rows
(default 10^6): three end-to-end ``engine.fit(..., backend="gpu")`` wall times after a warm-up
fit (kernel compilation, Numba caches), then one fit under cProfile, its 30 costliest functions
by own time.  Writes ``gpu_profile_n{N}.txt`` into OUT_DIR (default bench/results).
"""
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import engine
from bench.problems import make_problem


def run(n=1_000_000, out="bench/results"):
    """Time and profile the GPU fit at ``n`` rows; return the report's text."""
    warm = make_problem(20_000, 1_000)
    engine.fit(warm.cohort, penalty=engine.L1(warm.lam), backend="gpu")
    problem = make_problem(n, 1_000)
    penalty = engine.L1(problem.lam)
    seconds = []
    for _ in range(3):
        t0 = time.perf_counter()
        result = engine.fit(problem.cohort, penalty=penalty, backend="gpu")
        seconds.append(time.perf_counter() - t0)
    profiler = cProfile.Profile()
    profiler.enable()
    engine.fit(problem.cohort, penalty=penalty, backend="gpu")
    profiler.disable()
    stats = io.StringIO()
    pstats.Stats(profiler, stream=stats).sort_stats("tottime").print_stats(30)
    text = (f"GPU Cox L1 fit, N = {n:,}, P = 1,000, 5% density, K = 1: end to end "
            f"{', '.join(f'{s:.3f}' for s in seconds)} s (best {min(seconds):.3f} s), "
            f"{result.n_iter} iterations\n\n{stats.getvalue()}")
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"gpu_profile_n{n}.txt").write_text(text)
    return text


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000,
              sys.argv[2] if len(sys.argv) > 2 else "bench/results"))
